import { describe, expect, it } from 'vitest';
import { isSensitiveKey, REDACT_CENSOR, REDACT_TRUNCATED, redactSecrets } from '../src/index.js';

describe('isSensitiveKey', () => {
  it.each([
    'authorization',
    'Authorization',
    'proxy-authorization',
    'cookie',
    'set-cookie',
    'password',
    'passwd',
    'secret',
    'clientSecret',
    'client_secret',
    'token',
    'accessToken',
    'refresh_token',
    'bearerToken',
    'apiKey',
    'x-api-key',
    'privateKey',
  ])('treats %s as a credential', (key) => {
    expect(isSensitiveKey(key)).toBe(true);
  });

  it.each(['secretName', 'tokenPath', 'maxTokens', 'agent', 'requestId', 'host', 'keyId'])(
    'leaves %s alone',
    (key) => {
      expect(isSensitiveKey(key)).toBe(false);
    },
  );
});

describe('redactSecrets', () => {
  it('returns the same object when nothing is sensitive', () => {
    const obj = { a: 1, b: { c: [1, { d: 'x' }] } };
    expect(redactSecrets(obj)).toBe(obj);
  });

  it('copies only what it changes and never mutates the input', () => {
    const untouched = { e: 1 };
    const obj = {
      keep: untouched,
      headers: { authorization: 'Bearer x', host: 'h' },
      list: [{ token: 't' }, 2],
    };
    const out = redactSecrets(obj);
    expect(out).toEqual({
      keep: { e: 1 },
      headers: { authorization: REDACT_CENSOR, host: 'h' },
      list: [{ token: REDACT_CENSOR }, 2],
    });
    expect(out.keep).toBe(untouched);
    expect(obj.headers.authorization).toBe('Bearer x');
    expect((obj.list[0] as { token: string }).token).toBe('t');
  });

  it('censors whole values under sensitive keys, but not undefined ones', () => {
    expect(redactSecrets({ secret: { name: 'x' }, token: undefined })).toEqual({
      secret: REDACT_CENSOR,
      token: undefined,
    });
  });

  it('handles null-prototype records like IncomingMessage headers', () => {
    const headers = Object.assign(Object.create(null) as Record<string, string>, { cookie: 'sid=1' });
    expect(redactSecrets({ headers }).headers.cookie).toBe(REDACT_CENSOR);
  });

  it('leaves class instances such as errors to their serializers', () => {
    const err = Object.assign(new Error('x'), { token: 't' });
    expect(redactSecrets({ err }).err).toBe(err);
  });

  it('ends on cyclic objects and truncates records deeper than it walks instead of logging them', () => {
    const cyclic: Record<string, unknown> = { name: 'loop', token: 't' };
    cyclic.self = cyclic;
    const out = redactSecrets(cyclic) as Record<string, unknown>;
    expect(out.token).toBe(REDACT_CENSOR);
    expect(JSON.stringify(out)).not.toContain('"t"');
    expect(JSON.stringify(out)).toContain(REDACT_TRUNCATED);
    const deep = { a: { b: { c: { d: { e: { f: { password: 'p' } } } } } } };
    const redacted = JSON.stringify(redactSecrets(deep));
    expect(redacted).not.toContain('"p"');
    expect(redacted).toBe(`{"a":{"b":{"c":{"d":{"e":{"f":"${REDACT_TRUNCATED}"}}}}}}`);
    expect(deep.a.b.c.d.e.f.password).toBe('p');
  });
});
