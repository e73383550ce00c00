import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { CALLER_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import {
  createResourceProxyService,
  renderKubeconfig,
  validateResourceProxyConfig,
} from '@pullplane/resource-proxy';
import { builtAppMain, runKubectl, waitFor } from '@pullplane/testing';
import { Registry } from 'prom-client';
import { Agent as HttpAgent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceProxyOptions } from '../src/options.js';
import { type Harness, logger, startHarness } from './harness.js';

// Issue 8 at the resource proxy: only caller credentials reach a cluster, registration tokens
// expire and can be revoked, and no identity header ever reaches the cluster.
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (h) rmSync(h.dir, { recursive: true, force: true });
});

const message = (body: string) => (JSON.parse(body) as { message: string }).message;
const kubeconfigWith = (name: string, user: { certPem: string; keyPem: string } | { token: string }) => {
  const file = path.join(h.dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    renderKubeconfig([
      {
        name: 'agent-a',
        server: 'token' in user ? `${h.proxyUrl}/clusters/agent-a` : h.proxyUrl,
        caPem: h.pki.ca.certPem,
        ...('token' in user
          ? { token: user.token }
          : { clientCertPem: user.certPem, clientKeyPem: user.keyPem }),
      },
    ]),
  );
  return file;
};

describe('credential kinds at the resource proxy', () => {
  it("refuses the agent's own certificate as a caller (kubectl is asked for credentials)", async () => {
    const agentCert = await h.pki.agentCert('agent-a');
    const r = await runKubectl(['get', 'pods', '-n', 'demo'], {
      kubeconfig: kubeconfigWith('as-agent', agentCert),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/the server has asked for the client to provide credentials/);
    const direct = await h.call('GET', '/api/v1/namespaces/demo/pods', { cert: agentCert });
    expect(direct.status).toBe(401);
    expect(message(direct.body)).toMatch(/is an agent credential; only caller credentials are accepted here/);
    // The same request with a caller certificate for agent-a works.
    const ok = await runKubectl(['get', 'pods', '-n', 'demo', '-o', 'name'], {
      kubeconfig: h.certKubeconfig,
    });
    expect(ok.code).toBe(0);
  });

  it("refuses a proxy's certificate and a certificate without a kind", async () => {
    const proxy = await h.call('GET', '/api', { cert: await h.pki.proxyCert('agent-a') });
    expect(proxy.status).toBe(401);
    const unmarked = await h.call('GET', '/api', { cert: await h.pki.clientCert('agent-a') });
    expect(unmarked.status).toBe(401);
    expect(message(unmarked.body)).toMatch(/does not say it is a caller credential.*pullplane kubeconfig/);
  });

  it("refuses an agent's token (another audience) as a caller token", async () => {
    const sameKey = await TokenAuthority.fromPem(h.tokens.exportPrivateKeyPem(), {
      audience: 'stream-gateway',
    });
    const r = await h.call('GET', '/clusters/agent-a/api', { token: await sameKey.issue('agent-a') });
    expect(r.status).toBe(401);
    expect(message(r.body)).toMatch(/unexpected "aud" claim value/);
  });
});

describe('registration tokens', () => {
  it('are refused once expired', async () => {
    // Exactly what the gateway writes into a cluster Secret, issued two hours ago for one hour.
    const past = await TokenAuthority.fromPem(h.tokens.exportPrivateKeyPem(), {
      audience: CALLER_TOKEN_AUDIENCE,
      now: () => new Date(Date.now() - 2 * 3600_000),
    });
    const expired = await past.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    const r = await runKubectl(['get', 'pods', '-n', 'demo'], {
      kubeconfig: kubeconfigWith('expired', { token: expired }),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/the server has asked for the client to provide credentials/);
    const direct = await h.call('GET', '/clusters/agent-a/api', { token: expired });
    expect([direct.status, message(direct.body)]).toEqual([
      401,
      'credentials not accepted: token has expired',
    ]);
    const current = await h.tokens.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    expect((await h.call('GET', '/clusters/agent-a/api', { token: current })).status).toBe(200);
  });

  it('are refused once revoked, from the durable store or a control event', async () => {
    const token = await h.tokens.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    const other = await h.tokens.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    expect((await h.call('GET', '/clusters/agent-a/api', { token })).status).toBe(200);
    const jti = (await h.tokens.verify(token)).jti;
    await h.bus.revocations.add({ kind: 'token', jti, reason: 'leaked', at: new Date().toISOString() });
    await expect
      .poll(async () => (await h.call('GET', '/clusters/agent-a/api', { token })).status, { timeout: 10_000 })
      .toBe(401);
    expect(message((await h.call('GET', '/clusters/agent-a/api', { token })).body)).toMatch(
      /has been revoked/,
    );
    await h.bus.control.publish({ type: 'token-denied', jti: (await h.tokens.verify(other)).jti });
    await expect
      .poll(async () => (await h.call('GET', '/clusters/agent-a/api', { token: other })).status, {
        timeout: 10_000,
      })
      .toBe(401);
  });

  it('end the watch they opened within a second of their revocation, and say why', async () => {
    const token = await h.tokens.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    const jti = (await h.tokens.verify(token)).jti;
    const watch = await openWatch(token);
    await h.bus.control.publish({ type: 'token-denied', jti });
    expect(await endedWithin(watch, 1_000)).toMatch(/terminated|other side closed/);
    await waitFor(() =>
      h.lines.some((l) => l.msg === 'ended open requests of a revoked caller token' && l.jti === jti),
    );
    expect(
      h.lines.find(
        (l) =>
          l.msg === 'resource proxy request' &&
          String(l.path).includes('watch=true') &&
          String(l.error) === `caller token ${jti} revoked`,
      ),
    ).toMatchObject({ caller: 'argocd-server', agent: 'agent-a', status: 200 });
    // The watch again, as client-go would retry it: refused.
    const again = await h.call('GET', WATCH, { token });
    expect(again.status).toBe(401);
  });
});

const WATCH = '/clusters/agent-a/api/v1/namespaces/demo/pods?watch=true';

/** A watch through the proxy, open (its head arrived); its body is read until it ends. */
async function openWatch(token: string) {
  const dispatcher = new HttpAgent({ connect: { ca: h.pki.ca.certPem } });
  const res = await request(`${h.proxyUrl}${WATCH}`, {
    dispatcher,
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.statusCode).toBe(200);
  const ended = (async () => {
    try {
      for await (const _ of res.body) {
        // Events, if any, are not what this is about.
      }
      return 'ended cleanly';
    } catch (err) {
      return String(err);
    } finally {
      await dispatcher.destroy();
    }
  })();
  return { ended };
}

/** How the watch ended, under a bounded wait: the event, or a failure after `ms`. */
function endedWithin(watch: { ended: Promise<string> }, ms: number): Promise<string> {
  return Promise.race([
    watch.ended,
    new Promise<string>((_r, reject) =>
      setTimeout(() => reject(new Error(`watch still open after ${ms} ms`)), ms),
    ), // wait-ok: the bound the issue sets on ending a revoked stream
  ]);
}

describe('identity headers never reach the cluster', () => {
  const identity = {
    'x-remote-user': 'system:admin',
    'x-remote-group': 'system:masters',
    'x-remote-extra-scopes': 'everything',
    'X-Remote-Extra-Reason': 'because',
    'x-forwarded-client-cert': 'URI=spiffe://cluster.local/ns/kube-system/sa/admin',
    'l5d-client-id': 'admin.kube-system.serviceaccount.identity.linkerd.cluster.local',
  };
  const sent = (marker: string) => h.cluster.requests.find((q) => q.query.stripped === marker);

  it('are stripped by the resource proxy (the API stand-in logs what it received)', async () => {
    h.cluster.clearRequests();
    const caller = await h.pki.callerCert('agent-a');
    const r = await h.call('GET', '/api/v1/namespaces/demo/pods?stripped=proxy', {
      cert: caller,
      headers: identity,
    });
    expect(r.status).toBe(200);
    const seen = sent('proxy');
    expect(seen).toBeDefined();
    for (const name of Object.keys(identity)) expect(seen!.headers[name.toLowerCase()], name).toBeUndefined();
  });

  it('are stripped by the agent too, for whatever reaches it through the tunnel', async () => {
    h.cluster.clearRequests();
    // Straight into the tunnel, past the resource proxy's own stripping.
    const stream = h.gateway.openLocal('agent-a', {
      head: {
        case: 'http',
        value: {
          method: 'GET',
          path: '/api/v1/namespaces/demo/pods?stripped=agent',
          headers: Object.entries(identity).map(([name, value]) => ({ name, value })),
        },
      },
    });
    expect((await stream.responseHead()).status).toBe(200);
    await text(stream);
    const seen = sent('agent');
    expect(seen).toBeDefined();
    for (const name of Object.keys(identity)) expect(seen!.headers[name.toLowerCase()], name).toBeUndefined();
  });
});

describe('mesh callers', () => {
  it('are pinned to the callers namespaces and trust domain, and ambiguous XFCC is refused', async () => {
    const { config } = loadConfig(resourceProxyOptions, {
      argv: [
        '--listen-host=127.0.0.1',
        '--listen-port=0',
        '--metrics-port=0',
        '--healthz-port=0',
        '--insecure-plaintext',
        '--auth=istio',
        '--mesh-trust-domain=cluster.local',
        '--mesh-caller-namespaces=argocd',
        '--allowed-callers=argocd-server',
        '--gateway-plaintext',
        '--nats-insecure',
      ],
      env: {},
      validate: (c) => validateResourceProxyConfig(c, {}),
    });
    const app = createResourceProxyService(config, {
      logger,
      registry: new Registry(),
      bus: createMemoryBus(),
    });
    await app.start();
    try {
      const ask = async (xfcc: string) => {
        const res = await request(`http://127.0.0.1:${app.proxy!.port}/clusters/agent-z/api`, {
          headers: { 'x-forwarded-client-cert': xfcc },
        });
        return [res.statusCode, message(await res.body.text())] as const;
      };
      const by = 'By=spiffe://cluster.local/ns/argocd/sa/argocd-agent-resource-proxy';
      expect(await ask(`${by};URI=spiffe://evil.example/ns/argocd/sa/argocd-server`)).toEqual([
        401,
        expect.stringMatching(/does not match/),
      ]);
      expect((await ask(`${by};URI=spiffe://cluster.local/ns/team-x/sa/argocd-server`))[0]).toBe(401);
      expect(
        await ask(
          `${by};URI=spiffe://cluster.local/ns/argocd/sa/argocd-server;URI=spiffe://cluster.local/ns/argocd/sa/evil`,
        ),
      ).toEqual([401, expect.stringMatching(/exactly one is required/)]);
      // Authenticated and allowed: the answer now comes from routing (no such agent here).
      expect(await ask(`${by};URI=spiffe://cluster.local/ns/argocd/sa/argocd-server`)).toEqual([
        502,
        expect.stringMatching(/^Agent is not connected/),
      ]);
    } finally {
      await app.stop();
    }
  });
});

describe('--allow-insecure-non-loopback', () => {
  /** Everything the built resource proxy logs up to its ops server listening (after any warning). */
  async function startupLines(host: string, extra: string[]): Promise<Array<Record<string, unknown>>> {
    const main = builtAppMain('resource-proxy');
    const child = spawn(
      process.execPath,
      [
        main,
        '--insecure-plaintext',
        `--listen-host=${host}`,
        '--listen-port=0',
        '--auth=istio',
        '--mesh-trust-domain=cluster.local',
        '--mesh-caller-namespaces=argocd',
        '--allowed-callers=argocd-server',
        '--gateway-plaintext',
        '--nats-url=nats://127.0.0.1:1',
        '--nats-insecure',
        '--metrics-port=0',
        '--healthz-port=0',
        ...extra,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      return await new Promise((resolve, reject) => {
        let buf = '';
        child.stdout!.on('data', (d: Buffer) => {
          buf += d.toString();
          const lines = buf
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as Record<string, unknown>);
          if (lines.some((l) => l.msg === 'ops server listening')) resolve(lines);
        });
        child.once('exit', (code) => reject(new Error(`resource proxy exited (${code}):\n${buf}`)));
      });
    } finally {
      child.kill('SIGKILL');
    }
  }

  it('is logged as a warning at startup, as the gateway does', async () => {
    const warning =
      '--insecure-plaintext on a non-loopback address: anyone who reaches the port can forge identity headers';
    const open = await startupLines('0.0.0.0', ['--allow-insecure-non-loopback']);
    expect(open.filter((l) => l.msg === warning).map((l) => l.level)).toEqual(['warn']);
    const loopback = await startupLines('127.0.0.1', []);
    expect(loopback.filter((l) => l.level === 'warn')).toEqual([]);
  });
});

describe('revoked agents', () => {
  // Last: agent-a stays revoked for the rest of this harness.
  it('are unreachable through the resource proxy whatever the credentials', async () => {
    const token = await h.tokens.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
    expect((await h.call('GET', '/clusters/agent-a/api', { token })).status).toBe(200);
    const watch = await openWatch(token);
    const watchEnded = endedWithin(watch, 1_000);
    await h.bus.control.publish({
      type: 'agent-revoked',
      agent: 'agent-a',
      reason: 'cluster decommissioned',
    });
    await expect
      .poll(async () => (await h.call('GET', '/clusters/agent-a/api', { token })).status, { timeout: 10_000 })
      .toBe(403);
    const byCert = await h.call('GET', '/api', { cert: await h.pki.callerCert('agent-a') });
    // The watch opened before the revocation ended with it.
    expect(await watchEnded).toMatch(/terminated|other side closed/);
    await waitFor(() =>
      h.lines.some(
        (l) =>
          l.msg === 'resource proxy request' &&
          String(l.path).includes('watch=true') &&
          /revoked: cluster decommissioned/.test(String(l.error)),
      ),
    );
    expect([byCert.status, message(byCert.body)]).toEqual([
      403,
      'the agent has been revoked: agent agent-a has been revoked',
    ]);
  });
});
