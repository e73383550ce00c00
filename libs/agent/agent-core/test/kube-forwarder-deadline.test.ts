import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { KubeConfig } from '@kubernetes/client-node';
import { type Multiplexer, memoryTunnel, TunnelErrorCode } from '@pullplane/tunnel';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeForwarder } from '../src/index.js';

// The forwarder behind a real multiplexer pair and a real HTTP backend standing in for the
// cluster API: the requester's timeout travels in Open and the agent side enforces it.
let backend: http.Server;
const hung: http.IncomingMessage[] = [];
let gateway: Multiplexer;

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    if (req.url?.startsWith('/hang')) {
      // The agent aborting the call shows here as an 'aborted' error, then 'close'.
      req.on('error', () => undefined);
      hung.push(req);
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end('{"kind":"Status","status":"Success"}');
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: `http://127.0.0.1:${(backend.address() as AddressInfo).port}`, skipTLSVerify: true },
    { name: 'u', token: 't' },
  );
  const forwarder = createKubeForwarder({
    kubeConfig: kc,
    logger: pino({ level: 'silent' }),
    filter: 'none',
  });
  gateway = memoryTunnel((s) => forwarder.handle(s)).requester;
});

afterAll(() => {
  backend.closeAllConnections();
  backend.close();
});

const get = (path: string, timeoutMs: number) => ({
  head: { case: 'http' as const, value: { method: 'GET', path, headers: [] } },
  timeoutMs,
});

describe('kube forwarder and the requester timeout', () => {
  it('abandons the cluster call of a request whose timeout passed, and says why', async () => {
    const s = gateway.open(get('/hang/pods', 300));
    // The requester itself never gives up: only the agent's enforcement can end this.
    const failure = await s.responseHead().catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: TunnelErrorCode.DEADLINE_EXCEEDED });
    expect(hung).toHaveLength(1);
    // The cluster sees its connection closed, with no answer ever sent.
    const req = hung[0]!;
    if (!req.destroyed) await new Promise((r) => req.once('close', r));
    expect(req.destroyed).toBe(true);
  });

  it('answers a request that is quicker than its timeout as usual', async () => {
    const s = gateway.open(get('/api/v1/namespaces', 5_000));
    expect((await s.responseHead()).status).toBe(200);
    expect(await text(s)).toBe('{"kind":"Status","status":"Success"}');
  });
});
