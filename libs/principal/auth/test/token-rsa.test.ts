import { createPrivateKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { decodeProtectedHeader, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { TokenAuthority, TokenError } from '../src/index.js';

const code = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TokenError);
  return (err as TokenError).code;
};

/** What argocd-agent's principal signs into self-registered cluster Secrets (golang-jwt, RS512). */
async function argocdAgentToken(pem: string, claims: { aud: string; sub: string }) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS512', typ: 'JWT' })
    .setJti(randomUUID())
    .setIssuer('argocd-agent-server')
    .setSubject(claims.sub)
    .setAudience([claims.aud])
    .setNotBefore(now)
    .setIssuedAt(now)
    .sign(createPrivateKey(pem));
}

describe('TokenAuthority with RSA keys', () => {
  it('signs RS512 with an RSA key (argocd-agent-jwt) and verifies RS256 and RS512 tokens of that key', async () => {
    const rs512 = await TokenAuthority.generateRsa({ audience: 'resource-proxy' }, 2048);
    expect(rs512.algorithm).toBe('RS512');
    const token = await rs512.issue('agent-a', { ttlSeconds: 60, agents: ['agent-a'] });
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS512', typ: 'JWT', kid: rs512.keyId });
    expect(await rs512.verify(token)).toMatchObject({ agent: 'agent-a', agents: ['agent-a'] });
    const pem = rs512.exportPrivateKeyPem();
    const rs256 = await TokenAuthority.fromPem(pem, { audience: 'resource-proxy', rsaAlgorithm: 'RS256' });
    const t256 = await rs256.issue('agent-b', { ttlSeconds: 60 });
    expect(decodeProtectedHeader(t256).alg).toBe('RS256');
    expect((await rs512.verify(t256)).agent).toBe('agent-b');
  });

  it('keys the algorithm by key type: an ECDSA verifier refuses RSA tokens and the other way round', async () => {
    const rsa = await TokenAuthority.generateRsa({}, 2048);
    const ec = await TokenAuthority.generate();
    expect(await code(ec.verify(await rsa.issue('agent-a')))).toBe('TOKEN_MALFORMED');
    expect(await code(rsa.verify(await ec.issue('agent-a')))).toBe('TOKEN_MALFORMED');
    // An HS512 token keyed with the RSA public key (the classic confusion) is refused too.
    const publicPem = (await TokenAuthority.fromPem(rsa.exportPrivateKeyPem())).exportPublicKeyPem();
    const hs = await new SignJWT({ jti: 'x' })
      .setProtectedHeader({ alg: 'HS512', typ: 'JWT' })
      .setIssuer('pullplane')
      .setSubject('agent-a')
      .setIssuedAt()
      .sign(new TextEncoder().encode(publicPem));
    expect(await code(rsa.verify(hs))).toBe('TOKEN_MALFORMED');
  });

  it('verifies with a public key alone and refuses to issue with it', async () => {
    const rsa = await TokenAuthority.generateRsa({}, 2048);
    const verifier = await TokenAuthority.fromPem(rsa.exportPublicKeyPem());
    expect(verifier.canIssue).toBe(false);
    expect((await verifier.verify(await rsa.issue('agent-a'))).agent).toBe('agent-a');
    expect(await code(verifier.issue('agent-a'))).toBe('TOKEN_INVALID_KEY');
  });

  it("accepts argocd-agent's resource-proxy tokens only with argocd-agent's issuer and audience", async () => {
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs1', format: 'pem' })
      .toString();
    const legacy = await TokenAuthority.fromPem(pem, {
      issuer: 'argocd-agent-server',
      audience: 'argocd-agent-server-resource-proxy',
    });
    const rp = await argocdAgentToken(pem, { aud: 'argocd-agent-server-resource-proxy', sub: 'agent-a' });
    const verified = await legacy.verify(rp);
    expect(verified.agent).toBe('agent-a');
    expect(verified.expiresAt).toBeUndefined();
    // The same key signs argocd-agent's agent access tokens: never a caller credential.
    const access = await argocdAgentToken(pem, { aud: 'argocd-agent-server-access', sub: 'agent-a' });
    expect(await code(legacy.verify(access))).toBe('TOKEN_WRONG_AUDIENCE');
    // Nor does our own verifier (issuer pullplane) take their tokens.
    const ours = await TokenAuthority.fromPem(pem, { audience: 'argocd-agent-server-resource-proxy' });
    expect(await code(ours.verify(rp))).toBe('TOKEN_WRONG_ISSUER');
  });
});
