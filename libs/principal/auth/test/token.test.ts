import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  extractBearerToken,
  InMemoryDenyList,
  identityFromBearerToken,
  TokenAuthority,
  TokenError,
  type TokenErrorCode,
} from '../src/index.js';

async function tokenError(promise: Promise<unknown>): Promise<TokenError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TokenError);
  return err as TokenError;
}

async function expectCode(promise: Promise<unknown>, code: TokenErrorCode): Promise<void> {
  expect((await tokenError(promise)).code).toBe(code);
}

/** Signs arbitrary claims with the authority's own key, to reach checks after the signature. */
async function forge(
  authority: TokenAuthority,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
) {
  const key = (await import('node:crypto')).createPrivateKey(authority.exportPrivateKeyPem());
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'JWT', ...header }).sign(key);
}

let clock = new Date('2026-01-01T00:00:00Z');
const now = () => clock;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pullplane-auth-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('TokenAuthority', () => {
  it('issues and verifies a non-expiring token', async () => {
    const authority = await TokenAuthority.generate({ now });
    const token = await authority.issue('agent-a');
    const [header, payload] = token
      .split('.')
      .slice(0, 2)
      .map((part) => JSON.parse(new TextDecoder().decode(base64url.decode(part))));
    expect(header).toEqual({ alg: 'ES256', typ: 'JWT', kid: authority.keyId });
    expect(payload).toMatchObject({ sub: 'agent-a', iss: 'pullplane', iat: clock.getTime() / 1000 });
    expect(payload.exp).toBeUndefined();
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    const verified = await authority.verify(token);
    expect(verified).toEqual({ agent: 'agent-a', jti: payload.jti, issuedAt: clock });
    // Still valid ten years on.
    clock = new Date('2036-01-01T00:00:00Z');
    expect((await authority.verify(token)).agent).toBe('agent-a');
    clock = new Date('2026-01-01T00:00:00Z');
  });

  it('honours ttlSeconds and reports expiry', async () => {
    const authority = await TokenAuthority.generate({ now, clockToleranceSeconds: 0 });
    const token = await authority.issue('agent-a', { ttlSeconds: 60 });
    expect((await authority.verify(token)).expiresAt).toEqual(new Date(clock.getTime() + 60_000));
    const start = clock;
    clock = new Date(start.getTime() + 61_000);
    await expectCode(authority.verify(token), 'TOKEN_EXPIRED');
    clock = start;
  });

  it('rejects tampered payloads and foreign keys', async () => {
    const authority = await TokenAuthority.generate({ now });
    const other = await TokenAuthority.generate({ now });
    const token = await authority.issue('agent-a');
    const [h, , s] = token.split('.');
    const evilPayload = base64url.encode(
      JSON.stringify({ sub: 'agent-b', iss: 'pullplane', jti: 'x', iat: 1 }),
    );
    await expectCode(authority.verify(`${h}.${evilPayload}.${s}`), 'TOKEN_BAD_SIGNATURE');
    await expectCode(other.verify(token), 'TOKEN_BAD_SIGNATURE');
    const flipped = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    await expectCode(authority.verify(flipped), 'TOKEN_BAD_SIGNATURE');
  });

  it('rejects algorithm substitution', async () => {
    const authority = await TokenAuthority.generate({ now });
    const claims = { sub: 'agent-a', iss: 'pullplane', jti: 'j', iat: clock.getTime() / 1000 };
    const none = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(JSON.stringify(claims))}.`;
    await expectCode(authority.verify(none), 'TOKEN_MALFORMED');
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode(authority.exportPublicKeyPem()));
    await expectCode(authority.verify(hs), 'TOKEN_MALFORMED');
  });

  it('checks issuer and audience', async () => {
    const authority = await TokenAuthority.generate({ now });
    const foreign = await TokenAuthority.fromPem(authority.exportPrivateKeyPem(), {
      issuer: 'someone-else',
      now,
    });
    await expectCode(authority.verify(await foreign.issue('agent-a')), 'TOKEN_WRONG_ISSUER');

    const scoped = await TokenAuthority.fromPem(authority.exportPrivateKeyPem(), {
      audience: 'gateway-eu',
      now,
    });
    const token = await scoped.issue('agent-a');
    expect((await scoped.verify(token)).agent).toBe('agent-a');
    await expectCode(
      scoped.verify(await scoped.issue('agent-a', { audience: 'gateway-us' })),
      'TOKEN_WRONG_AUDIENCE',
    );
    await expectCode(scoped.verify(await authority.issue('agent-a')), 'TOKEN_WRONG_AUDIENCE');
    // A verifier without an audience refuses tokens scoped to one.
    await expectCode(authority.verify(token), 'TOKEN_WRONG_AUDIENCE');
    expect((await authority.verify(token, { audience: 'gateway-eu' })).agent).toBe('agent-a');
  });

  it('refuses revoked tokens and revoked agents', async () => {
    const denyList = new InMemoryDenyList({ now });
    const authority = await TokenAuthority.generate({ denyList, now });
    const a1 = await authority.issue('agent-a');
    const a2 = await authority.issue('agent-a');
    const b = await authority.issue('agent-b');
    const { jti } = await authority.verify(a1);

    denyList.deny({ kind: 'token', jti });
    const revoked = await tokenError(authority.verify(a1));
    expect(revoked.code).toBe('TOKEN_REVOKED');
    expect(revoked.message).toContain(jti);
    expect((await authority.verify(a2)).agent).toBe('agent-a');

    denyList.deny({ kind: 'agent', agent: 'agent-a' });
    await expectCode(authority.verify(a2), 'TOKEN_REVOKED');
    expect((await authority.verify(b)).agent).toBe('agent-b');

    denyList.remove({ kind: 'agent', agent: 'agent-a' });
    expect((await authority.verify(a2)).agent).toBe('agent-a');
  });

  it('consults an asynchronous DenyList', async () => {
    const asked: Array<[string, string]> = [];
    const authority = await TokenAuthority.generate({
      now,
      denyList: {
        isDenied: async (jti, agent) => {
          asked.push([jti, agent]);
          return agent === 'agent-x';
        },
        deny: async () => {},
      },
    });
    await expectCode(authority.verify(await authority.issue('agent-x')), 'TOKEN_REVOKED');
    expect((await authority.verify(await authority.issue('agent-y'))).agent).toBe('agent-y');
    expect(asked.map(([, agent]) => agent)).toEqual(['agent-x', 'agent-y']);
  });

  it('rejects bad subjects, missing claims and future tokens signed with the right key', async () => {
    const authority = await TokenAuthority.generate({ now });
    const iat = clock.getTime() / 1000;
    const base = { iss: 'pullplane', jti: 'j-1', iat };
    for (const sub of ['Agent-A', 'agent_a', 'a'.repeat(64), '', 'аgent-a', 42]) {
      await expectCode(authority.verify(await forge(authority, { ...base, sub })), 'TOKEN_INVALID_SUBJECT');
    }
    await expectCode(
      authority.verify(await forge(authority, { iss: 'pullplane', jti: 'j', iat })),
      'TOKEN_INVALID_SUBJECT',
    );
    await expectCode(
      authority.verify(await forge(authority, { iss: 'pullplane', sub: 'a', iat })),
      'TOKEN_MALFORMED',
    );
    await expectCode(
      authority.verify(await forge(authority, { iss: 'pullplane', sub: 'a', jti: 'j' })),
      'TOKEN_MALFORMED',
    );
    await expectCode(
      authority.verify(await forge(authority, { ...base, sub: 'a', iat: iat + 3600 })),
      'TOKEN_NOT_YET_VALID',
    );
    await expectCode(
      authority.verify(await forge(authority, { ...base, sub: 'a', nbf: iat + 3600 })),
      'TOKEN_NOT_YET_VALID',
    );
    await expectCode(
      authority.verify(await forge(authority, { ...base, sub: 'a' }, { typ: 'at+jwt' })),
      'TOKEN_MALFORMED',
    );
  });

  it('rejects malformed strings without throwing anything else', async () => {
    const authority = await TokenAuthority.generate({ now });
    for (const token of [
      '',
      'abc',
      'a.b',
      'a.b.c.d',
      'a..c',
      '....',
      `${'a'.repeat(9000)}.b.c`,
      'e30.e30.',
      'e30.e30.AAAA',
      '!.!.!',
    ]) {
      await expectCode(authority.verify(token), 'TOKEN_MALFORMED');
    }
  });

  it('loads keys from PEM strings and files, PKCS#8 and SEC1', async () => {
    const original = await TokenAuthority.generate({ now });
    const token = await original.issue('agent-a');
    const pem = original.exportPrivateKeyPem();
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const path = join(dir, 'signing-key.pem');
    await writeFile(path, pem);
    const { createPrivateKey } = await import('node:crypto');
    const sec1 = createPrivateKey(pem).export({ type: 'sec1', format: 'pem' }).toString();
    for (const loaded of [
      await TokenAuthority.fromPem(pem, { now }),
      await TokenAuthority.fromFile(path, { now }),
      await TokenAuthority.load(path, { now }),
      await TokenAuthority.load(sec1, { now }),
    ]) {
      expect(loaded.keyId).toBe(original.keyId);
      expect((await loaded.verify(token)).agent).toBe('agent-a');
    }
    expect(original.exportPublicKeyPem()).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });

  it('refuses unusable keys and bad issue requests', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    // RSA is accepted from 2048 bits (token-rsa.test.ts); a 1024-bit key is not.
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    });
    await expectCode(TokenAuthority.fromPem(rsa.toString()), 'TOKEN_INVALID_KEY');
    await expectCode(TokenAuthority.fromPem(p384.toString()), 'TOKEN_INVALID_KEY');
    await expectCode(
      Promise.resolve().then(() => TokenAuthority.fromPem('nope')),
      'TOKEN_INVALID_KEY',
    );
    await expectCode(TokenAuthority.fromFile(join(dir, 'missing.pem')), 'TOKEN_INVALID_KEY');
    const authority = await TokenAuthority.generate();
    await expectCode(authority.issue('Agent_A'), 'TOKEN_INVALID_REQUEST');
    await expectCode(authority.issue('agent-a', { ttlSeconds: 0 }), 'TOKEN_INVALID_REQUEST');
    await expectCode(authority.issue('agent-a', { ttlSeconds: 1.5 }), 'TOKEN_INVALID_REQUEST');
  });
});

describe('InMemoryDenyList', () => {
  it('forgets entries after expiresAt', () => {
    let t = 1000;
    const list = new InMemoryDenyList({ now: () => new Date(t) });
    list.deny({ kind: 'token', jti: 'j', expiresAt: new Date(2000) });
    list.deny({ kind: 'agent', agent: 'a', expiresAt: new Date(5000) });
    list.deny({ kind: 'agent', agent: 'a', expiresAt: new Date(3000) });
    list.deny({ kind: 'agent', agent: 'forever' });
    expect(list.isDenied('j', 'x')).toBe(true);
    expect(list.isDenied('other', 'a')).toBe(true);
    t = 2500;
    expect(list.isDenied('j', 'x')).toBe(false);
    expect(list.size).toBe(2);
    t = 4000;
    expect(list.isDenied('other', 'a')).toBe(true);
    t = 6000;
    expect(list.prune()).toBe(1);
    expect(list.isDenied('other', 'a')).toBe(false);
    expect(list.isDenied('other', 'forever')).toBe(true);
  });
});

describe('extractBearerToken and identityFromBearerToken', () => {
  it('accepts exactly one well-formed bearer token', () => {
    expect(extractBearerToken({ authorization: 'Bearer abc.def.ghi' })).toEqual({
      ok: true,
      token: 'abc.def.ghi',
    });
    expect(extractBearerToken({ Authorization: ['bearer abc-_~+/=='] })).toEqual({
      ok: true,
      token: 'abc-_~+/==',
    });
  });

  const rejected: Array<[string, Record<string, string | string[]>, string]> = [
    ['missing', {}, 'AUTH_HEADER_MISSING'],
    ['repeated', { authorization: ['Bearer a', 'Bearer b'] }, 'AUTH_HEADER_REPEATED'],
    [
      'repeated across key case',
      { authorization: 'Bearer a', Authorization: 'Bearer b' },
      'AUTH_HEADER_REPEATED',
    ],
    ['empty', { authorization: '' }, 'AUTH_HEADER_EMPTY'],
    ['basic scheme', { authorization: 'Basic YTpi' }, 'AUTH_BEARER_MALFORMED'],
    ['no token', { authorization: 'Bearer' }, 'AUTH_BEARER_MALFORMED'],
    ['no token after space', { authorization: 'Bearer ' }, 'AUTH_BEARER_MALFORMED'],
    ['two spaces', { authorization: 'Bearer  abc' }, 'AUTH_BEARER_MALFORMED'],
    ['two tokens', { authorization: 'Bearer abc def' }, 'AUTH_BEARER_MALFORMED'],
    ['folded values', { authorization: 'Bearer abc, Bearer def' }, 'AUTH_BEARER_MALFORMED'],
    ['trailing space', { authorization: 'Bearer abc ' }, 'AUTH_BEARER_MALFORMED'],
    ['CRLF', { authorization: 'Bearer abc\r\nx: y' }, 'AUTH_HEADER_CONTROL_CHARACTER'],
    ['NUL', { authorization: 'Bearer abc\u0000' }, 'AUTH_HEADER_CONTROL_CHARACTER'],
    ['non-ASCII', { authorization: 'Bearer аbc' }, 'AUTH_HEADER_NON_ASCII'],
    ['oversized', { authorization: `Bearer ${'a'.repeat(9000)}` }, 'AUTH_HEADER_TOO_LONG'],
  ];
  it.each(rejected)('rejects %s', (_name, headers, code) => {
    expect(extractBearerToken(headers)).toMatchObject({ ok: false, code });
  });

  it('turns a verified token into an identity, passing token codes through', async () => {
    const denyList = new InMemoryDenyList();
    const authority = await TokenAuthority.generate({ denyList });
    const token = await authority.issue('agent-a');
    const ok = await identityFromBearerToken(authority, { authorization: `Bearer ${token}` });
    expect(ok).toMatchObject({ ok: true, identity: { agent: 'agent-a', via: 'token' } });
    expect(await identityFromBearerToken(authority, {})).toMatchObject({
      ok: false,
      code: 'AUTH_HEADER_MISSING',
    });
    denyList.deny({ kind: 'agent', agent: 'agent-a' });
    const revoked = await identityFromBearerToken(authority, { authorization: `Bearer ${token}` });
    expect(revoked).toMatchObject({ ok: false, code: 'TOKEN_REVOKED' });
    expect(!revoked.ok && revoked.reason).toMatch(/^unable to extract identity: token .* has been revoked$/);
  });
});
