import http from 'node:http';
import { connect } from 'node:net';
import { TokenAuthority } from '@pullplane/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CallerAuthOptions, resolveTarget } from '../src/index.js';

// Request targeting on its own: a real HTTP server on port 0 runs resolveTarget on whatever a
// raw socket sends (no client library normalising the path first) and answers what it decided.
let server: http.Server;
let port: number;
let tokens: TokenAuthority;
let onlyA: string;
let aAndB: string;
const revoked = new Set(['agent-gone']);

beforeAll(async () => {
  tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
  onlyA = await tokens.issue('caller-a', { agents: ['agent-a'] });
  aAndB = await tokens.issue('caller-ab', { agents: ['agent-a', 'agent-b', 'agent-gone'] });
  const auth: CallerAuthOptions = { tokens, isRevoked: (a) => revoked.has(a) };
  server = http.createServer((req, res) => {
    void resolveTarget(req, auth).then((r) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(r.ok ? r.target : r.failure));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** Sends `GET <rawPath>` byte for byte and returns what resolveTarget decided. */
function target(rawPath: string, token?: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () =>
      socket.write(
        `GET ${rawPath} HTTP/1.1\r\nHost: x\r\n${token ? `Authorization: Bearer ${token}\r\n` : ''}Connection: close\r\n\r\n`,
      ),
    );
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString();
      const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
      try {
        resolve(JSON.parse(body) as Record<string, unknown>);
      } catch {
        reject(new Error(`not a decision: ${JSON.stringify(raw)}`));
      }
    });
  });
}

describe('path tricks are refused before anyone is routed', () => {
  const cases: Array<[string, RegExp]> = [
    ['/clusters/agent-a/api/v1/../../../clusters/agent-b/api/v1/secrets', /dot segments/],
    ['/clusters/agent-a/./api', /dot segments/],
    ['/clusters/agent-a/api/v1/%2e%2e/%2e%2e/clusters/agent-b/api', /encoded dots/],
    ['/clusters/agent-a/api/v1/%2E%2E/secrets', /encoded dots/],
    ['/clusters/agent-a%2Fagent-b/api', /encoded dots, slashes/],
    ['/clusters/agent-a/api%2fv1/secrets', /encoded dots, slashes/],
    ['/clusters/agent-a/api%5cv1', /encoded dots, slashes/],
    ['/clusters/agent-a/api%00', /encoded dots, slashes or NUL/],
    ['/clusters/agent-a//api/v1', /empty path segments/],
    ['//clusters/agent-b/api', /empty path segments/],
    ['/clusters//api/v1', /empty path segments/],
    ['/clusters/agent-a/api/%zz', /malformed percent-encoding/],
  ];
  for (const [path, detail] of cases) {
    it(`refuses ${path}`, async () => {
      const r = await target(path, aAndB);
      expect(r).toMatchObject({ name: 'BAD_PATH' });
      expect(String(r.detail)).toMatch(detail);
    });
  }
});

describe('agent names', () => {
  for (const name of ['Agent-A', 'agent_a', 'agent.a', '-agent', 'agent-', 'a'.repeat(64), '%61gent-a']) {
    it(`refuses ${JSON.stringify(name)}: not a DNS label`, async () => {
      const r = await target(`/clusters/${name}/api`, aAndB);
      expect(r).toMatchObject({ name: 'BAD_PATH' });
    });
  }

  it('takes a 63-character label, and the /k8s/ prefix', async () => {
    const long = 'a'.repeat(63);
    expect(await target(`/clusters/${long}/api`, await tokens.issue('c', { agents: [long] }))).toMatchObject({
      agent: long,
      path: '/api',
    });
    expect(await target('/k8s/clusters/agent-a/api/v1', onlyA)).toMatchObject({
      agent: 'agent-a',
      path: '/api/v1',
    });
  });
});

describe('?agentName= (argocd-agent style)', () => {
  it('names the agent and is removed, other parameters kept exactly as sent', async () => {
    expect(await target('/api/v1/pods?labelSelector=app%3Dx&agentName=agent-b&watch=1', aAndB)).toMatchObject(
      { agent: 'agent-b', path: '/api/v1/pods?labelSelector=app%3Dx&watch=1' },
    );
  });

  it('must agree with the path', async () => {
    const r = await target('/clusters/agent-a/api?agentName=agent-b', aAndB);
    expect(r).toMatchObject({ name: 'BAD_PATH' });
    expect(String(r.detail)).toMatch(/the path names agent agent-a but \?agentName= names agent-b/);
  });

  it('cannot be smuggled twice, percent-encoded or as a non-label', async () => {
    expect(await target('/api?agentName=agent-a&agentName=agent-b', aAndB)).toMatchObject({
      name: 'BAD_PATH',
    });
    // Encoded, the parameter is still read (and checked) as agentName, not passed on.
    expect(await target('/clusters/agent-a/api?%61gentName=agent-b', aAndB)).toMatchObject({
      name: 'BAD_PATH',
    });
    expect(await target('/api?%61gentName=agent-b', onlyA)).toMatchObject({ name: 'NOT_BOUND' });
    expect(await target('/api?agentName=agent-b%26x%3D1', aAndB)).toMatchObject({ name: 'BAD_PATH' });
    expect(await target('/api?agentName=', aAndB)).toMatchObject({ name: 'BAD_PATH' });
  });

  it('a query that looks like a path trick is only a query', async () => {
    expect(
      await target('/clusters/agent-a/api/v1/pods?fieldSelector=metadata.name%3D..%2F..', onlyA),
    ).toMatchObject({
      agent: 'agent-a',
      path: '/api/v1/pods?fieldSelector=metadata.name%3D..%2F..',
    });
  });
});

describe('who may reach which agent', () => {
  it('routes a single-agent credential to its agent without naming it, and nowhere else', async () => {
    expect(await target('/api/v1/namespaces', onlyA)).toMatchObject({
      caller: 'caller-a',
      via: 'token',
      agent: 'agent-a',
      path: '/api/v1/namespaces',
    });
    expect(await target('/clusters/agent-b/api', onlyA)).toMatchObject({ name: 'NOT_BOUND' });
    expect(await target('/api?agentName=agent-b', onlyA)).toMatchObject({ name: 'NOT_BOUND' });
  });

  it('makes a credential for several agents name one', async () => {
    const r = await target('/api/v1/namespaces', aAndB);
    expect(r).toMatchObject({ name: 'BAD_PATH' });
    expect(String(r.detail)).toMatch(/name the agent/);
  });

  it('refuses a revoked agent to everyone, and callers without valid credentials', async () => {
    expect(await target('/clusters/agent-gone/api', aAndB)).toMatchObject({ name: 'REVOKED' });
    expect(await target('/clusters/agent-a/api')).toMatchObject({ name: 'NO_CREDENTIALS' });
    expect(await target('/clusters/agent-a/api', `${onlyA}x`)).toMatchObject({ name: 'BAD_CREDENTIALS' });
    const other = await TokenAuthority.generate({ audience: 'resource-proxy' });
    expect(
      await target('/clusters/agent-a/api', await other.issue('caller-a', { agents: ['agent-a'] })),
    ).toMatchObject({ name: 'BAD_CREDENTIALS' });
  });
});
