import { once } from 'node:events';
import { renameSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { makeTempDir } from '@pullplane/testing';
import { type Multiplexer, memoryTunnel } from '@pullplane/tunnel';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExtensionExecutor, ExtensionRegistry } from '../src/index.js';

// The executor behind a real multiplexer pair, in front of a real HTTP backend that echoes
// what it received: what the principal can and cannot make the agent send.
let backend: http.Server;
let backendUrl: string;
/** Takes TCP connections and never answers: a TLS handshake with it never completes. */
let silent: net.Server;
const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
let gateway: Multiplexer;
let registry: ExtensionRegistry;
let mapFile: string;
const secret: Record<string, Buffer> = {};

const writeMap = (yaml: string) => {
  const tmp = `${mapFile}.tmp`;
  writeFileSync(tmp, yaml);
  renameSync(tmp, mapFile);
};

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'application/json');
    res.setHeader('set-cookie', 'argocd.token=planted');
    res.end(JSON.stringify({ url: req.url, headers: req.headers }));
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  silent = net.createServer(() => undefined);
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  mapFile = join(makeTempDir('ext-map-'), 'extensions.yaml');
  writeMap(`extensions:
  - name: metrics
    url: ${backendUrl}/base/
    headers:
      - name: Authorization
        value: $metrics.token
      - name: X-Static
        value: fixed
  - name: down
    url: http://127.0.0.1:1/
  - name: silent
    url: https://127.0.0.1:${(silent.address() as AddressInfo).port}/
    backend:
      connectionTimeout: 200ms
`);
  secret['metrics.token'] = Buffer.from('Bearer from-secret\n');
  registry = new ExtensionRegistry({
    path: mapFile,
    secret: { current: () => secret, onChange: () => () => undefined, description: 'Secret t/ext' },
    logger: pino({ level: 'silent' }),
  });
  await registry.start();
  const executor = new ExtensionExecutor({
    registry,
    agentName: 'agent-a',
    logger: pino({ level: 'silent' }),
  });
  gateway = memoryTunnel((s) => executor.handle(s)).requester;
});

afterAll(() => {
  registry.stop();
  backend.closeAllConnections();
  backend.close();
  silent.close();
});

const call = async (name: string, path: string, headers: Array<{ name: string; value: string }> = []) => {
  const s = gateway.open({
    head: { case: 'extension', value: { name, http: { method: 'GET', path, headers, upgrade: '' } } },
  });
  const head = await s.responseHead();
  const body = await text(s);
  return { status: head.status, headers: head.headers, body };
};

describe('extension executor', () => {
  it('forwards under the base path with Argocd-* headers, configured headers and the Secret value; never Cookie or the caller Authorization', async () => {
    const r = await call('metrics', '/api/q?x=1', [
      { name: 'Cookie', value: 'argocd.token=user-session' },
      { name: 'Authorization', value: 'Bearer user' },
      { name: 'Argocd-Application-Name', value: 'argocd:guestbook' },
      { name: 'Argocd-Username', value: 'alice' },
      { name: 'X-Static', value: 'from-caller' },
    ]);
    expect(r.status).toBe(200);
    const got = JSON.parse(r.body) as { url: string; headers: Record<string, string> };
    expect(got.url).toBe('/base/api/q?x=1');
    expect(got.headers.cookie).toBeUndefined();
    expect(got.headers.authorization).toBe('Bearer from-secret');
    expect(got.headers['argocd-application-name']).toBe('argocd:guestbook');
    expect(got.headers['argocd-username']).toBe('alice');
    expect(got.headers['x-static']).toBe('fixed');
    // A backend in the workload cluster cannot set cookies on the Argo CD origin.
    expect(r.headers.find((h) => h.name.toLowerCase() === 'set-cookie')).toBeUndefined();
  });

  it('answers 404 with a Status for an extension the map does not name', async () => {
    const before = seen.length;
    const r = await call('http-anything', '/');
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 404, reason: 'NotFound' });
    expect(JSON.parse(r.body).message).toContain('http-anything');
    expect(seen.length).toBe(before);
  });

  it.each(['/../secret', '/a/%2e%2e/secret', '/a%2fb', '//evil.example/x', '/a\\b', 'relative'])(
    'refuses path %s with 400 before the backend sees it',
    async (path) => {
      const before = seen.length;
      const r = await call('metrics', path);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
      // A following good request is the backend's next one: the refused one never arrived.
      await call('metrics', '/after');
      expect(seen.length).toBe(before + 1);
      expect(seen.at(-1)!.url).toBe('/base/after');
    },
  );

  it('answers 503 naming the missing Secret key, and serves once the key exists', async () => {
    delete secret['metrics.token'];
    const r = await call('metrics', '/x');
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body).message).toContain('metrics.token');
    secret['metrics.token'] = Buffer.from('Bearer again');
    expect((await call('metrics', '/x')).status).toBe(200);
  });

  it('answers 502 when the backend is down', async () => {
    const r = await call('down', '/');
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 502, reason: 'BadGateway' });
  });

  it('answers 504 when no connection is made within the backend connectionTimeout', async () => {
    const r = await call('silent', '/');
    expect(r.status).toBe(504);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 504 });
    expect(JSON.parse(r.body).message).toContain('UND_ERR_CONNECT_TIMEOUT');
  });

  it('serves a changed map without a restart, keeping the last good one through a broken file', async () => {
    const reloaded = once(registry, 'reload');
    writeMap(`extensions:\n  - name: fresh\n    url: ${backendUrl}/fresh\n`);
    await registry.reload();
    await reloaded;
    expect((await call('fresh', '/v')).body).toContain('"/fresh/v"');
    expect((await call('metrics', '/x')).status).toBe(404);
    writeMap('extensions: [ {');
    await registry.reload();
    expect((await call('fresh', '/v')).status).toBe(200);
  });
});
