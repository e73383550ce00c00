import { describe, expect, it } from 'vitest';
import {
  CachedTokenVerifier,
  InMemoryDenyList,
  TokenAuthority,
  TokenError,
  TokenErrorCode,
  type TokenVerifier,
} from '../src/index.js';

// One clock for the authority and the cache, moved by the tests.
let clock = Date.parse('2026-01-01T00:00:00Z');
const now = () => clock;

/** A real TokenAuthority, counting the verifications that reach it. */
async function counted(options: { denyList?: InMemoryDenyList; clockToleranceSeconds?: number } = {}) {
  const authority = await TokenAuthority.generate({
    audience: 'resource-proxy',
    now: () => new Date(clock),
    ...options,
  });
  const calls = { n: 0 };
  const inner: TokenVerifier = {
    verify(token, opts) {
      calls.n++;
      return authority.verify(token, opts);
    },
  };
  return { authority, inner, calls };
}

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: unknown) => (e instanceof TokenError ? e.code : String(e)),
  );

describe('CachedTokenVerifier', () => {
  it('checks a token once and answers the same token from memory after that', async () => {
    const { authority, inner, calls } = await counted();
    const cache = new CachedTokenVerifier(inner, { now });
    const token = await authority.issue('argocd-server', { agents: ['a', 'b'], ttlSeconds: 600 });
    const first = await cache.verify(token);
    const second = await cache.verify(token);
    expect(second).toEqual(first);
    expect(first.agents).toEqual(['a', 'b']);
    expect([calls.n, cache.hits, cache.misses]).toEqual([1, 1, 1]);
  });

  it('checks the token again once it has expired, and the authority refuses it', async () => {
    const { authority, inner, calls } = await counted({ clockToleranceSeconds: 0 });
    const cache = new CachedTokenVerifier(inner, { now });
    const token = await authority.issue('argocd-server', { ttlSeconds: 60 });
    await cache.verify(token);
    clock += 59_000;
    expect(await code(cache.verify(token))).toBe('accepted');
    expect(calls.n).toBe(1);
    clock += 1_000;
    expect(await code(cache.verify(token))).toBe(TokenErrorCode.EXPIRED);
    expect([calls.n, cache.size]).toEqual([2, 0]);
  });

  it('refuses a remembered token as soon as the deny list names it or its agent', async () => {
    const denyList = new InMemoryDenyList({ now: () => new Date(clock) });
    const { authority, inner } = await counted({ denyList });
    const cache = new CachedTokenVerifier(inner, { denyList, now });
    const one = await authority.issue('argocd-server', { ttlSeconds: 600 });
    const two = await authority.issue('other-caller', { ttlSeconds: 600 });
    await cache.verify(one);
    await cache.verify(two);
    denyList.deny({ kind: 'token', jti: (await authority.verify(one)).jti });
    expect(await code(cache.verify(one))).toBe(TokenErrorCode.REVOKED);
    expect(await code(cache.verify(two))).toBe('accepted');
    denyList.deny({ kind: 'agent', agent: 'other-caller' });
    expect(await code(cache.verify(two))).toBe(TokenErrorCode.REVOKED);
  });

  it('forgets tokens by jti, by agent, and all of them when the key changes', async () => {
    const { authority, inner, calls } = await counted();
    const cache = new CachedTokenVerifier(inner, { now });
    const a = await authority.issue('caller-a', { ttlSeconds: 600 });
    const b = await authority.issue('caller-b', { ttlSeconds: 600 });
    const c = await authority.issue('caller-c', { ttlSeconds: 600 });
    for (const t of [a, b, c]) await cache.verify(t);
    expect(cache.size).toBe(3);
    cache.forgetToken((await authority.verify(a)).jti);
    cache.forgetAgent('caller-b');
    expect(cache.size).toBe(1);
    const before = calls.n;
    await cache.verify(a);
    await cache.verify(b);
    await cache.verify(c);
    expect(calls.n - before).toBe(2);
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it('does not remember a verification that was running when the key changed', async () => {
    const { authority } = await counted();
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slow: TokenVerifier = {
      async verify(token, opts) {
        await gate;
        return authority.verify(token, opts);
      },
    };
    const cache = new CachedTokenVerifier(slow, { now });
    const pending = cache.verify(await authority.issue('caller-a', { ttlSeconds: 600 }));
    cache.clear();
    release();
    await pending;
    expect(cache.size).toBe(0);
  });

  it('never remembers a refusal, and keys on the audience asked for', async () => {
    const { authority, inner, calls } = await counted();
    const cache = new CachedTokenVerifier(inner, { now });
    const stranger = await TokenAuthority.generate({ audience: 'resource-proxy' });
    const forged = await stranger.issue('caller-a', { ttlSeconds: 600 });
    expect(await code(cache.verify(forged))).toBe(TokenErrorCode.BAD_SIGNATURE);
    expect(await code(cache.verify(forged))).toBe(TokenErrorCode.BAD_SIGNATURE);
    expect(calls.n).toBe(2);
    const token = await authority.issue('caller-a', { ttlSeconds: 600 });
    await cache.verify(token);
    expect(await code(cache.verify(token, { audience: 'stream-gateway' }))).toBe(
      TokenErrorCode.WRONG_AUDIENCE,
    );
  });

  it('holds at most maxEntries, forgetting the least recently used', async () => {
    const { authority, inner, calls } = await counted();
    const cache = new CachedTokenVerifier(inner, { now, maxEntries: 2 });
    const [a, b, c] = await Promise.all(
      ['caller-a', 'caller-b', 'caller-c'].map((n) => authority.issue(n, { ttlSeconds: 600 })),
    );
    await cache.verify(a!);
    await cache.verify(b!);
    await cache.verify(a!); // a is now the most recent
    await cache.verify(c!); // evicts b
    expect(cache.size).toBe(2);
    const before = calls.n;
    await cache.verify(a!);
    expect(calls.n).toBe(before);
    await cache.verify(b!);
    expect(calls.n).toBe(before + 1);
  });
});
