import { PkiError, PkiErrorCode } from './errors.js';

/**
 * What a client certificate is for. One CA may sign all three, so the certificate itself
 * must say which it is, or a caller's kubeconfig could open a tunnel and an agent's
 * credentials could read another cluster:
 * - `agent`: opens its own tunnel on the gateway's agent listener, nothing else;
 * - `caller`: reaches one agent's cluster through the resource proxy (kubeconfigs, Argo CD);
 * - `proxy`: a proxy replica on the gateway's internal listener.
 */
export type CredentialKind = 'agent' | 'caller' | 'proxy';

export const CREDENTIAL_KINDS: readonly CredentialKind[] = ['agent', 'caller', 'proxy'];

/** SPIFFE-shaped URI SAN prefix; its own trust domain, so mesh SPIFFE IDs never look like it. */
export const CREDENTIAL_URI_PREFIX = 'spiffe://pullplane/';

const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** `spiffe://pullplane/<kind>/<name>`: the URI SAN that marks a certificate's kind. */
export function credentialUri(kind: CredentialKind, name: string): string {
  if (!CREDENTIAL_KINDS.includes(kind)) {
    throw new PkiError(
      PkiErrorCode.INVALID_INPUT,
      `credential kind must be agent, caller or proxy, got ${kind}`,
    );
  }
  if (!NAME.test(name)) {
    throw new PkiError(
      PkiErrorCode.INVALID_INPUT,
      `a ${kind} credential needs a DNS-label name, got ${JSON.stringify(name)}`,
    );
  }
  return `${CREDENTIAL_URI_PREFIX}${kind}/${name}`;
}

export type CredentialMarking =
  /** Exactly one well-formed marker. */
  | { marked: true; kind: CredentialKind; name: string }
  /** No marker at all: a certificate issued by other tooling (argocd-agent's, cert-manager…). */
  | { marked: false }
  /** Several markers, or one that does not parse: never trusted as any kind. */
  | { marked: 'invalid'; reason: string };

/** Reads the kind marker among a certificate's URI SANs. */
export function readCredentialMarking(uris: readonly string[]): CredentialMarking {
  const ours = uris.filter((u) => u.toLowerCase().startsWith(CREDENTIAL_URI_PREFIX));
  if (ours.length === 0) return { marked: false };
  if (ours.length > 1) {
    return { marked: 'invalid', reason: `certificate carries ${ours.length} credential kind URIs` };
  }
  const uri = ours[0] as string;
  const [kind, name, ...rest] = uri.slice(CREDENTIAL_URI_PREFIX.length).split('/');
  if (
    !uri.startsWith(CREDENTIAL_URI_PREFIX) ||
    rest.length > 0 ||
    !CREDENTIAL_KINDS.includes(kind as CredentialKind) ||
    name === undefined ||
    !NAME.test(name)
  ) {
    return {
      marked: 'invalid',
      reason: `malformed credential kind URI ${JSON.stringify(uri.slice(0, 120))}`,
    };
  }
  return { marked: true, kind: kind as CredentialKind, name };
}
