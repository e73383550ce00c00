import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { KubeConfig } from '@kubernetes/client-node';
import { NOT_MANAGED_MESSAGE, TRACKING_ID_ANNOTATION } from '@pullplane/managed-filter';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '@pullplane/testing';
import { type Multiplexer, memoryTunnel } from '@pullplane/tunnel';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createKubeForwarder, type KubeForwarder } from '../src/index.js';

// The managed rule reads the objects it judges, so the agent asks the cluster for JSON. A server
// that ignores that Accept (an aggregated API of the cluster's own) must not get its answer past
// the rule unread: the cluster is the least trusted place. In front of the fake cluster API, a
// server that answers YAML (or a huge object) on the paths the test names and passes everything
// else through.
const TOKEN = 'agent-service-account-token';
let cluster: FakeKubeApiServer;
let front: http.Server;
let forwarder: KubeForwarder;
let tunnel: Multiplexer;
const yamlPaths = new Set<string>();
/** Paths answered with a JSON object over the 16 MiB the agent reads before judging. */
const hugePaths = new Set<string>();

beforeAll(async () => {
  cluster = await startFakeKubeApiServer({ host: '127.0.0.1', token: TOKEN });
  const upstream = new URL(cluster.url);
  front = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', cluster.url).pathname;
    if (hugePaths.has(pathname)) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'huge', namespace: 'default' },
          data: { x: 'x'.repeat(17 * 1024 * 1024) },
        }),
      );
      return;
    }
    const asYaml = yamlPaths.has(pathname);
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        if (!asYaml || (answer.statusCode ?? 500) >= 300) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        void text(answer).then((json) => {
          res.writeHead(200, { 'content-type': 'application/yaml' });
          res.end(stringify(JSON.parse(json)));
        });
      },
    );
    req.pipe(out);
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  await fetch(`${cluster.url}/api/v1/namespaces/default/configmaps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'tracked',
        annotations: { [TRACKING_ID_ANNOTATION]: 'app:/ConfigMap:default/tracked' },
      },
    }),
  });
  await fetch(`${cluster.url}/api/v1/namespaces/default/configmaps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'untracked' } }),
  });
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: `http://127.0.0.1:${(front.address() as AddressInfo).port}`, skipTLSVerify: true },
    { name: 'u', token: TOKEN },
  );
  forwarder = createKubeForwarder({ kubeConfig: kc, logger: pino({ level: 'silent' }), filter: 'managed' });
  await forwarder.start();
  tunnel = memoryTunnel((s) => forwarder.handle(s)).requester;
});

afterAll(async () => {
  forwarder.stop();
  front.closeAllConnections();
  front.close();
  await cluster.close();
});

async function get(path: string): Promise<{ status: number; body: string }> {
  const s = tunnel.open({ head: { case: 'http', value: { method: 'GET', path, headers: [] } } });
  const head = await s.responseHead();
  return { status: head.status, body: await text(s) };
}

/** The answer an unmanaged object gets: the cluster's 404 wording, nothing of the object. */
function expectNotManaged(answer: { status: number; body: string }): void {
  expect(answer.status).toBe(404);
  expect(JSON.parse(answer.body)).toMatchObject({
    kind: 'Status',
    reason: 'NotFound',
    message: NOT_MANAGED_MESSAGE,
  });
}

it('answers a named GET whose object came back as YAML with the not-managed 404, never the object', async () => {
  const path = '/api/v1/namespaces/default/configmaps/tracked';
  // As JSON, the tracked object is shown.
  expect((await get(path)).status).toBe(200);
  yamlPaths.add(path);
  expectNotManaged(await get(path));
});

it('answers a LIST that came back as YAML with a 502 Status naming the type, never the unfiltered list', async () => {
  const path = '/api/v1/namespaces/default/configmaps';
  const asJson = await get(path);
  expect(asJson.status).toBe(200);
  expect(asJson.body).toContain('"tracked"');
  expect(asJson.body).not.toContain('untracked');
  yamlPaths.add(path);
  const answer = await get(path);
  expect(answer.status).toBe(502);
  expect(answer.body).not.toContain('untracked');
  expect(JSON.parse(answer.body)).toMatchObject({
    kind: 'Status',
    code: 502,
    message: expect.stringContaining('application/yaml'),
  });
});

it('answers a named GET whose object is too large to judge with the not-managed 404, not a reset', async () => {
  const path = '/api/v1/namespaces/default/configmaps/huge';
  hugePaths.add(path);
  expectNotManaged(await get(path));
});
