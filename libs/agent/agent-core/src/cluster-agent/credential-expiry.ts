/** CredentialExpiresSoon turns True this long before the agent's credential expires. */
export const CREDENTIAL_EXPIRY_WARNING_MS = 14 * 24 * 3600_000;

export interface CredentialCondition {
  status: 'True' | 'False';
  reason: string;
  message: string;
}

const RENEW = {
  token:
    'issue a new one (pullplane agent create) and put it in the Secret spec.token.secretRef names; it is used from the next connection, with no restart',
  certificate:
    'issue a new one (pullplane cert create --kind agent) and update its Secret; it is used from the next connection, with no restart',
} as const;

/**
 * The CredentialExpiresSoon condition for the agent's credential (its token's `exp`, or its
 * client certificate's notAfter) at `now`: True from two weeks before it expires.
 */
export function credentialExpiryCondition(
  credential: 'token' | 'certificate',
  expiresAt: Date | undefined,
  now: number,
): CredentialCondition {
  const Name = credential === 'token' ? 'Token' : 'Certificate';
  if (expiresAt === undefined)
    return { status: 'False', reason: 'NoExpiry', message: `the agent ${credential} carries no expiry` };
  const at = expiresAt.toISOString();
  if (expiresAt.getTime() - now >= CREDENTIAL_EXPIRY_WARNING_MS)
    return { status: 'False', reason: `${Name}Valid`, message: `the agent ${credential} expires at ${at}` };
  return {
    status: 'True',
    reason: expiresAt.getTime() <= now ? `${Name}Expired` : `${Name}ExpiresSoon`,
    message: `the agent ${credential} expires at ${at}: ${RENEW[credential]}`,
  };
}
