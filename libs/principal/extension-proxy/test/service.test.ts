import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TLSSocket } from 'node:tls';
import { TunnelConnector } from '@pullplane/agent-core';
import { parseAuthMethod, TokenAuthority } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway } from '@pullplane/gateway';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { createTestPki } from '@pullplane/testing';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Agent as HttpAgent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  createExtensionProxyService,
  type ExtensionProxyService,
  extensionProxyServiceOptions,
} from '../src/index.js';

// The extension proxy service in one process, as the all-in-one composes it: its own flags, an
// in-memory bus, a router to a gateway beside it, and an agent dialling that gateway over mTLS
// whose "extension" echoes what reached it. Work done once per connection or per token, not
// per request, and revocation that reaches what was remembered.
const logger = pino({ level: 'silent' });
const bus = createMemoryBus();
const dir = mkdtempSync(path.join(tmpdir(), 'extension-proxy-service-'));
const write = (name: string, body: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, body);
  return p;
};
let pki: Awaited<ReturnType<typeof createTestPki>>;
let gateway: Gateway;
let agent: TunnelConnector;
let service: ExtensionProxyService;
let tokens: TokenAuthority;
let url: string;

beforeAll(async () => {
  pki = await createTestPki();
  const server = await pki.serverCert();
  gateway = new Gateway({
    bus,
    logger,
    registry: new Registry(),
    agentListener: {
      host: '127.0.0.1',
      port: 0,
      tls: { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem, requireClientCert: true },
    },
    advertiseHost: '127.0.0.1',
    authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
    authenticateInternal: () => ({ ok: false, code: 'NO_INTERNAL', reason: 'one process' }),
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 1_000,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
  const agentCert = await pki.agentCert('agent-a');
  agent = new TunnelConnector({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    serverNameOverride: 'localhost',
    credentials: tunnelCredentials.tls(
      Buffer.from(pki.ca.certPem),
      Buffer.from(agentCert.keyPem),
      Buffer.from(agentCert.certPem),
    ),
    heartbeatIntervalMs: 5_000,
    keepAlivePingIntervalMs: 0,
    capabilities: ['extension'],
    logger,
    onStream: (s) => {
      s.resume();
      s.respond(200, [{ name: 'Content-Type', value: 'text/plain' }]);
      s.end('from agent-a');
    },
  });
  const connected = new Promise((resolve) => agent.once('connected', resolve));
  agent.start();
  await connected;
  tokens = await TokenAuthority.generate({ audience: 'extension-proxy' });
  const { config } = loadConfig(extensionProxyServiceOptions, {
    argv: [
      '--listen-host=127.0.0.1',
      '--listen-port=0',
      `--tls-cert-path=${write('tls.crt', server.certPem)}`,
      `--tls-key-path=${write('tls.key', server.keyPem)}`,
      `--client-ca-path=${write('ca.crt', pki.ca.certPem)}`,
      `--token-key-path=${write('token.key', tokens.exportPrivateKeyPem())}`,
    ],
    env: {},
  });
  service = createExtensionProxyService(
    { ...config, gatewayPlaintext: true, drainTimeout: 1_000, healthzPort: 0, metricsPort: 0 },
    { logger, registry: new Registry(), bus, localGateway: () => gateway },
  );
  await service.start();
  url = `https://127.0.0.1:${service.proxy!.port}/metrics/x`;
  // Presence reaches the router asynchronously.
  const deadline = Date.now() + 10_000;
  while (!service.router?.lookup('agent-a')) {
    if (Date.now() > deadline) throw new Error('agent-a never reached the router');
    await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await agent?.stop();
  await gateway?.stop();
  await bus.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** One kept-alive TLS connection to the proxy (undici opens one socket and reuses it). */
function connection(cert?: { certPem: string; keyPem: string }) {
  const dispatcher = new HttpAgent({
    connections: 1,
    connect: {
      ca: pki.ca.certPem,
      servername: 'localhost',
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    },
  });
  return {
    async get(headers: Record<string, string> = {}) {
      const res = await request(url, {
        dispatcher,
        headers: { 'argocd-target-cluster-name': 'agent-a', ...headers },
      });
      return { status: res.statusCode, body: await res.body.text() };
    },
    close: () => dispatcher.close(),
  };
}

describe("the Argo CD server's certificate", () => {
  it('is read once per connection, however many requests the connection carries', async () => {
    const port = service.proxy!.port;
    const original = TLSSocket.prototype.getPeerCertificate;
    let reads = 0;
    vi.spyOn(TLSSocket.prototype, 'getPeerCertificate').mockImplementation(function (
      this: TLSSocket,
      detailed?: boolean,
    ) {
      if (this.localPort === port) reads++;
      return original.call(this, detailed as true);
    });
    const c = connection(await pki.callerCert('argocd-server'));
    try {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await c.get());
      expect(answers.map((a) => [a.status, a.body])).toEqual(Array(5).fill([200, 'from agent-a']));
      expect(reads).toBe(1);
    } finally {
      await c.close();
    }
  });

  it('belongs to its connection: another connection with an agent certificate is refused meanwhile', async () => {
    const argocd = connection(await pki.callerCert('argocd-server'));
    const impostor = connection(await pki.agentCert('argocd-server'));
    try {
      expect((await argocd.get()).status).toBe(200);
      const refused = await impostor.get();
      expect(refused.status).toBe(401);
      expect(refused.body).toMatch(/is an agent credential/);
      expect((await impostor.get()).status).toBe(401);
      expect((await argocd.get()).status).toBe(200);
    } finally {
      await argocd.close();
      await impostor.close();
    }
  });
});

describe("the Argo CD server's bearer token", () => {
  it('has its signature checked once, then is answered from memory until revoked', async () => {
    const verify = vi.spyOn(TokenAuthority.prototype, 'verify');
    const token = await tokens.issue('argocd-server', { ttlSeconds: 3600 });
    const jti = (await tokens.verify(token)).jti;
    verify.mockClear();
    const c = connection();
    try {
      const auth = { authorization: `Bearer ${token}` };
      for (let i = 0; i < 4; i++) expect((await c.get(auth)).status).toBe(200);
      expect(verify).toHaveBeenCalledTimes(1);
      await bus.control.publish({ type: 'token-denied', jti });
      await expect.poll(async () => (await c.get(auth)).status).toBe(401);
      expect((await c.get(auth)).body).toMatch(/has been revoked/);
    } finally {
      await c.close();
    }
  });
});
