import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../src/index.js';
import { goBase64ErrorOffset } from '../src/kube/secret-data.js';

let server: FakeKubeApiServer;
let lenient: FakeKubeApiServer;
beforeAll(async () => {
  server = await startFakeKubeApiServer();
  lenient = await startFakeKubeApiServer({ strict: false });
});
afterAll(async () => {
  await server?.close();
  await lenient?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: test convenience for JSON bodies
type Json = Record<string, any>;

async function call(
  method: string,
  path: string,
  body: unknown,
  contentType = 'application/json',
  on = server,
) {
  const res = await fetch(`${on.url}${path}`, {
    method,
    headers: { 'content-type': contentType },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Json };
}

const SECRETS = '/api/v1/namespaces/default/secrets';
const secret = (name: string, fields: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name },
  ...fields,
});

describe('Go base64 decoding, as the API server decodes Secret data', () => {
  it('reports the byte offsets Go reports', () => {
    const cases: [string, number | undefined][] = [
      ['', undefined],
      ['dmFsdWU=', undefined],
      ['dmFs\ndWU=\r\n', undefined],
      ['YQ==', undefined],
      ['not base64!', 3],
      ['YQ', 0],
      ['YQ=', 3],
      ['YQ==YQ==', 4],
      ['Y===', 1],
      ['=', 0],
      ['YWJj-A==', 4],
      ['YQ=\n=', undefined],
      ['YWJjZA', 4],
    ];
    for (const [input, offset] of cases)
      expect(goBase64ErrorOffset(input), JSON.stringify(input)).toBe(offset);
  });

  it('accepts exactly the padded standard encodings, wherever CR/LF fall (fuzzed)', () => {
    const valid = /^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
    for (let i = 0; i < 500; i++) {
      const bytes = randomBytes(i % 40);
      expect(goBase64ErrorOffset(bytes.toString('base64'))).toBeUndefined();
      // base64url: the first '-' or '_' is the error, else the unpadded tail quantum.
      const url = bytes.toString('base64url');
      const bad = url.search(/[-_]/);
      const tail = url.length % 4 === 0 ? undefined : url.length - (url.length % 4);
      expect(goBase64ErrorOffset(url), url).toBe(bad >= 0 ? bad : tail);
    }
    const alphabet = 'AB=+/\n-';
    for (let i = 0; i < 5000; i++) {
      let s = '';
      for (let n = i % 13; n > 0; n--) s += alphabet[Math.floor(Math.random() * alphabet.length)];
      const offset = goBase64ErrorOffset(s);
      const clean = s.replace(/\n/g, '');
      expect(offset === undefined, JSON.stringify(s)).toBe(valid.test(clean));
      if (offset !== undefined) expect(offset, JSON.stringify(s)).toBeLessThanOrEqual(s.length);
    }
  });
});

describe('Secret admission', () => {
  it('refuses data that is not base64 with the decoder’s 400, and non-string values', async () => {
    const bad = await call('POST', SECRETS, secret('bad', { data: { key: 'not base64!' } }));
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({
      kind: 'Status',
      reason: 'BadRequest',
      code: 400,
      message: 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
    });
    const number = await call('POST', SECRETS, secret('num', { data: { key: 5 } }));
    expect(number.json.message).toBe(
      'Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal number into Go struct field Secret.data of type []uint8',
    );
    expect(
      server.store.get({ apiVersion: 'v1', kind: 'Secret', namespace: 'default', name: 'bad' }),
    ).toBeUndefined();
  });

  it('refuses bad data written by update and every patch type', async () => {
    expect((await call('POST', SECRETS, secret('held', { data: { a: 'YQ==' } }))).status).toBe(201);
    const path = `${SECRETS}/held`;
    const attempts = [
      await call('PUT', path, secret('held', { data: { a: '%%%' } })),
      await call('PATCH', path, { data: { a: '%%%' } }, 'application/merge-patch+json'),
      await call('PATCH', path, { data: { a: '%%%' } }, 'application/strategic-merge-patch+json'),
      await call(
        'PATCH',
        path,
        [{ op: 'replace', path: '/data/a', value: '%%%' }],
        'application/json-patch+json',
      ),
    ];
    for (const r of attempts) {
      expect(r.json.message).toBe(
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 0',
      );
    }
  });

  it('merges stringData into data, base64-encoded and winning over data, and never stores it', async () => {
    const created = await call(
      'POST',
      SECRETS,
      secret('merged', { data: { a: 'b2xk', keep: 'eA==' }, stringData: { a: 'new', b: 'ünï' } }),
    );
    expect(created.status).toBe(201);
    const expected = { a: 'bmV3', keep: 'eA==', b: Buffer.from('ünï').toString('base64') };
    expect(created.json.data).toEqual(expected);
    expect(created.json).not.toHaveProperty('stringData');
    const stored = server.store.get({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: 'default',
      name: 'merged',
    });
    expect(stored).toMatchObject({ data: expected });
    expect(stored).not.toHaveProperty('stringData');
    const patched = await call(
      'PATCH',
      `${SECRETS}/merged`,
      { stringData: { keep: 'y' } },
      'application/merge-patch+json',
    );
    expect(patched.json.data).toEqual({ ...expected, keep: 'eQ==' });
    expect(patched.json).not.toHaveProperty('stringData');
  });

  it('was lenient before: the lenient fake stores bad data and stringData as sent', async () => {
    const r = await call(
      'POST',
      SECRETS,
      secret('loose', { data: { a: 'not base64!' }, stringData: { b: 'x' } }),
      'application/json',
      lenient,
    );
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ data: { a: 'not base64!' }, stringData: { b: 'x' } });
  });
});
