import type { X509Certificate } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import {
  type CertificateDescription,
  type CredentialKind,
  credentialUri,
  describeCertificate,
  PkiError,
  readCredentialMarking,
} from '@pullplane/pki';
import type { MtlsAuthMethod } from './auth-method.js';
import { IdentityErrorCode } from './errors.js';
import { checkedIdentity, type IdentityResult, identityFromMatch, quote, reject } from './identity.js';

/** `tls.TLSSocket#getPeerCertificate()` (an empty object when the client sent none) or a crypto X509Certificate. */
export type PeerCertificateInput =
  | PeerCertificate
  | X509Certificate
  | Record<string, never>
  | null
  | undefined;

/** Which kind of certificate a listener serves (see `CredentialKind` in @pullplane/pki). */
export interface CredentialKindPolicy {
  expect: CredentialKind;
  /**
   * Accept certificates with no kind marker at all (issued by other tooling, e.g.
   * argocd-agent's, CN = agent name). They are then indistinguishable from a caller's
   * certificate of the same CA, so this is an explicit opt-in for migrations.
   */
  allowUnmarked?: boolean;
  /** Appended to the refusal of an unmarked certificate: how to fix it, in the app's terms. */
  unmarkedHint?: string;
}

/**
 * Extracts the agent name from a client certificate the TLS layer has already verified
 * against the agent CA. Reads the DER itself rather than Node's pre-formatted subject and
 * SAN strings, whose escaping differs between Node versions. With a `kinds` policy the
 * certificate must also be of the kind the listener serves, for the same name.
 */
export function identityFromPeerCertificate(
  method: MtlsAuthMethod,
  peer: PeerCertificateInput,
  kinds?: CredentialKindPolicy,
): IdentityResult {
  const result = identify(method, peer);
  if (!result.ok || !kinds) return result.ok ? result.identity : result;
  return checkKind(result.cert, result.identity, kinds);
}

const a = (kind: string) => (/^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`);

function checkKind(
  cert: CertificateDescription,
  identity: IdentityResult & { ok: true },
  policy: CredentialKindPolicy,
): IdentityResult {
  const marking = readCredentialMarking(cert.uris);
  const name = identity.identity.agent;
  if (marking.marked === 'invalid') {
    return reject(
      IdentityErrorCode.CREDENTIAL_KIND_INVALID,
      `client certificate ${quote(cert.subject)}: ${marking.reason}`,
    );
  }
  if (marking.marked === false) {
    if (policy.allowUnmarked) return { ok: true, identity: { ...identity.identity, kind: 'unmarked' } };
    return reject(
      IdentityErrorCode.CREDENTIAL_UNMARKED,
      `client certificate ${quote(cert.subject)} does not say it is ${a(policy.expect)} credential (URI SAN ${credentialUri(policy.expect, name)})${policy.unmarkedHint ? `; ${policy.unmarkedHint}` : ''}`,
    );
  }
  if (marking.kind !== policy.expect) {
    return reject(
      IdentityErrorCode.CREDENTIAL_WRONG_KIND,
      `client certificate ${quote(cert.subject)} is ${a(marking.kind)} credential; only ${policy.expect} credentials are accepted here`,
    );
  }
  if (marking.name !== name) {
    return reject(
      IdentityErrorCode.CREDENTIAL_NAME_MISMATCH,
      `client certificate is ${a(marking.kind)} credential for ${quote(marking.name)}, not for ${quote(name)}`,
    );
  }
  return { ok: true, identity: { ...identity.identity, kind: marking.kind } };
}

type Identified =
  | { ok: true; identity: IdentityResult & { ok: true }; cert: CertificateDescription }
  | (IdentityResult & { ok: false });

function identify(method: MtlsAuthMethod, peer: PeerCertificateInput): Identified {
  const done = (r: IdentityResult, cert: CertificateDescription): Identified =>
    r.ok ? { ok: true, identity: r, cert } : r;
  const raw = peer && 'raw' in peer ? peer.raw : undefined;
  if (!raw || raw.length === 0) {
    return reject(IdentityErrorCode.PEER_CERTIFICATE_MISSING, 'the client presented no certificate');
  }
  let cert: CertificateDescription;
  try {
    cert = describeCertificate(raw);
  } catch (err) {
    if (err instanceof PkiError) {
      return reject(
        IdentityErrorCode.PEER_CERTIFICATE_INVALID,
        `client certificate is unreadable: ${err.message}`,
      );
    }
    throw err;
  }

  switch (method.match) {
    case 'common-name': {
      if (cert.commonNames.length !== 1) {
        return reject(
          IdentityErrorCode.PEER_CERTIFICATE_INVALID,
          `client certificate ${quote(cert.subject)} has ${cert.commonNames.length} subject CNs, expected exactly one`,
        );
      }
      return done(
        checkedIdentity(cert.commonNames[0] as string, 'mtls', cert.subject, 'client certificate CN'),
        cert,
      );
    }
    case 'subject': {
      const match = method.pattern.exec(cert.subject);
      if (!match) {
        return reject(
          IdentityErrorCode.NO_MATCH,
          `client certificate subject ${quote(cert.subject)} does not match ${quote(method.pattern.source)}`,
        );
      }
      return done(identityFromMatch(match, 'mtls', cert.subject, 'client certificate subject'), cert);
    }
    case 'uri': {
      for (const uri of cert.uris) {
        const match = method.pattern.exec(uri);
        if (match)
          return done(identityFromMatch(match, 'mtls', uri, `client certificate URI ${quote(uri)}`), cert);
      }
      return reject(
        IdentityErrorCode.NO_MATCH,
        cert.uris.length === 0
          ? 'client certificate has no URI SAN'
          : `no URI SAN of the client certificate matches ${quote(method.pattern.source)}`,
      );
    }
  }
}
