/**
 * The `exp` of a JWT, read without verifying it (the gateway verifies; the agent only reports
 * when its own credential runs out). Undefined for anything that is not a JWT with `exp`.
 */
export function tokenExpiry(token: string): Date | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? new Date(claims.exp * 1000) : undefined;
  } catch {
    return undefined;
  }
}
