import { isDnsLabel } from '@pullplane/names';
import type { CredentialKind } from '@pullplane/pki';
import { IdentityErrorCode, type RejectionCode } from './errors.js';

export type IdentitySource = 'mtls' | 'header' | 'token';

export interface AgentIdentity {
  /** The agent name: always a DNS-1123 label. */
  agent: string;
  via: IdentitySource;
  /** What the name was taken from (a SPIFFE URI, a subject, a header value, a token id), for logs. */
  evidence: string;
  /**
   * What the credential says it is, when it says: a certificate's kind marker, or
   * `unmarked` for a certificate accepted without one (legacy opt-in).
   */
  kind?: CredentialKind | 'unmarked';
}

export type IdentityResult =
  | { ok: true; identity: AgentIdentity }
  | { ok: false; code: RejectionCode; reason: string };

export type IdentityRejection = Extract<IdentityResult, { ok: false }>;

/** Every refusal reads "unable to extract identity: ..." so operators can grep one phrase. */
export function reject(code: RejectionCode, detail: string): IdentityRejection {
  return { ok: false, code, reason: `unable to extract identity: ${detail}` };
}

/**
 * Turns a regex match into an identity, enforcing the rules shared by every method: capture
 * group 1 must be present, non-empty and a DNS label.
 */
export function identityFromMatch(
  match: RegExpExecArray,
  via: IdentitySource,
  evidence: string,
  what: string,
): IdentityResult {
  const agent = match[1];
  if (agent === undefined || agent === '') {
    return reject(
      IdentityErrorCode.EMPTY_CAPTURE,
      `the pattern matched ${what} but captured an empty agent name`,
    );
  }
  return checkedIdentity(agent, via, evidence, what);
}

export function checkedIdentity(
  agent: string,
  via: IdentitySource,
  evidence: string,
  what: string,
): IdentityResult {
  if (!isDnsLabel(agent)) {
    return reject(
      IdentityErrorCode.INVALID_AGENT_NAME,
      `agent name ${quote(agent)} from ${what} is not a DNS-1123 label (lower-case a-z, 0-9, '-', at most 63 characters)`,
    );
  }
  return { ok: true, identity: { agent, via, evidence } };
}

/**
 * JSON-quotes a value for a log line, escaping control and non-ASCII characters so a hostile
 * value can neither forge log lines nor hide look-alike characters; long values are cut.
 */
export function quote(value: string, max = 80): string {
  const cut = value.length > max ? `${value.slice(0, max)}…` : value;
  return JSON.stringify(cut).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
