import { rmSync } from 'node:fs';
import { TLSSocket } from 'node:tls';
import { TokenAuthority } from '@pullplane/auth';
import { Agent as HttpAgent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Harness, startHarness } from './harness.js';

// Work done once per connection or per token, not per request: the caller's certificate is
// read on a connection's first request; a bearer token's signature is checked once until it
// expires or is revoked.
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (h) rmSync(h.dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** One kept-alive TLS connection to the proxy (undici opens one socket and reuses it). */
function connection(cert?: { certPem: string; keyPem: string }) {
  const dispatcher = new HttpAgent({
    connections: 1,
    connect: { ca: h.pki.ca.certPem, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) },
  });
  return {
    async get(urlPath: string, headers: Record<string, string> = {}) {
      const res = await request(`${h.proxyUrl}${urlPath}`, { dispatcher, headers });
      return { status: res.statusCode, body: await res.body.text() };
    },
    close: () => dispatcher.close(),
  };
}

/** Counts getPeerCertificate() on the proxy's server-side sockets (not the gateway's or the agent's). */
function countPeerCertificateReads() {
  const port = h.app.proxy!.port;
  const original = TLSSocket.prototype.getPeerCertificate;
  const reads = { n: 0 };
  vi.spyOn(TLSSocket.prototype, 'getPeerCertificate').mockImplementation(function (
    this: TLSSocket,
    detailed?: boolean,
  ) {
    if (this.localPort === port) reads.n++;
    return original.call(this, detailed as true);
  });
  return reads;
}

describe("the caller's certificate", () => {
  it('is read once per connection, however many requests the connection carries', async () => {
    const reads = countPeerCertificateReads();
    const c = connection(await h.pki.callerCert('agent-a'));
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await c.get('/api/v1/namespaces/demo/pods')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      expect(reads.n).toBe(1);
    } finally {
      await c.close();
    }
  });

  it('belongs to its connection: another connection with an agent certificate is refused meanwhile', async () => {
    const caller = connection(await h.pki.callerCert('agent-a'));
    const agent = connection(await h.pki.agentCert('agent-a'));
    try {
      expect((await caller.get('/api')).status).toBe(200);
      const refused = await agent.get('/api');
      expect(refused.status).toBe(401);
      expect(refused.body).toMatch(/is an agent credential/);
      // Both connections keep what they were told, request after request.
      expect((await agent.get('/api')).status).toBe(401);
      expect((await caller.get('/api')).status).toBe(200);
    } finally {
      await caller.close();
      await agent.close();
    }
  });
});

describe('bearer tokens', () => {
  it('have their signature checked once, then are answered from memory until revoked', async () => {
    const verify = vi.spyOn(TokenAuthority.prototype, 'verify');
    const token = await h.tokens.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    const jti = (await h.tokens.verify(token)).jti;
    verify.mockClear();
    const c = connection();
    try {
      const auth = { authorization: `Bearer ${token}` };
      for (let i = 0; i < 4; i++) expect((await c.get('/clusters/agent-a/api', auth)).status).toBe(200);
      expect(verify).toHaveBeenCalledTimes(1);
      await h.bus.control.publish({ type: 'token-denied', jti });
      await expect.poll(async () => (await c.get('/clusters/agent-a/api', auth)).status).toBe(401);
      expect((await c.get('/clusters/agent-a/api', auth)).body).toMatch(/has been revoked/);
    } finally {
      await c.close();
    }
  });
});
