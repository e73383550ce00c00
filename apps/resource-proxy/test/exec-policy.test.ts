import { rmSync } from 'node:fs';
import type { SessionRecord } from '@pullplane/agent-core';
import { clusterSecret } from '@pullplane/registration';
import {
  AGENT_SERVICE_ACCOUNT_USER,
  FULL_ACCESS_RULES,
  openArgoTerminal,
  runKubectl,
  waitFor,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

/** The agent's exec policy as callers meet it: off unless enabled, then its session cap and duration. */

const demoPod = (h: Harness) =>
  h.cluster.store
    .list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
    .find((p) => p.metadata.name?.startsWith('guestbook'))!.metadata.name!;

async function terminalSecret(h: Harness) {
  return clusterSecret({
    agent: 'agent-a',
    namespace: 'argocd',
    server: `${h.proxyUrl}/clusters/agent-a`,
    caPem: h.pki.ca.certPem,
    credentials: { bearerToken: await h.tokens.issue('argocd-server', { agents: ['agent-a'] }) },
    fingerprint: 'test',
  });
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: { statusCode: number; body: string }) => ({
      statusCode: err.statusCode,
      body: JSON.parse(err.body),
    }),
  );

describe('an agent without --enable-exec', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ requestTimeout: '30s' });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    if (h) rmSync(h.dir, { recursive: true, force: true });
  });

  it('refuses exec with 403 Forbidden naming the flag, and never asks the cluster', async () => {
    h.cluster.clearRequests();
    const r = await runKubectl(['-n', 'demo', 'exec', demoPod(h), '--', 'echo', 'x'], {
      kubeconfig: h.certKubeconfig,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'Error from server (Forbidden): exec, attach and port-forward are disabled on agent agent-a (enable them with --enable-exec)\n',
    );
    const terminal = await refusal(
      openArgoTerminal(await terminalSecret(h), { namespace: 'demo', pod: demoPod(h) }),
    );
    expect(terminal).toMatchObject({
      statusCode: 403,
      body: { kind: 'Status', code: 403, reason: 'Forbidden' },
    });
    expect(h.cluster.requests.filter((q) => /\/(exec|attach|portforward)$/.test(q.path))).toEqual([]);
    expect(h.cluster.streamSessions()).toEqual([]);
  });
});

describe('an agent with one session at a time, each at most 6 s', () => {
  let h: Harness;
  const ended: SessionRecord[] = [];
  beforeAll(async () => {
    h = await startHarness({
      exec: { enabled: true, maxSessions: 1, maxDurationMs: 6_000 },
      onSession: (r) => ended.push(r),
      requestTimeout: '30s',
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    if (h) rmSync(h.dir, { recursive: true, force: true });
  });

  it('refuses a second session with 429 while the first is open, then serves one again', async () => {
    const secret = await terminalSecret(h);
    const first = await openArgoTerminal(secret, { namespace: 'demo', pod: demoPod(h) });
    const second = await refusal(openArgoTerminal(secret, { namespace: 'demo', pod: demoPod(h) }));
    expect(second).toMatchObject({
      statusCode: 429,
      body: { kind: 'Status', code: 429, reason: 'TooManyRequests' },
    });
    expect(second!.body.message).toMatch(/already has 1 exec, attach and port-forward sessions open/);
    first.type('exit\r');
    await first.closed;
    await waitFor(() => h.agent.activeSessions === 0, 30_000);
    const again = await runKubectl(['-n', 'demo', 'exec', demoPod(h), '--', 'echo', 'again'], {
      kubeconfig: h.certKubeconfig,
    });
    expect(again).toMatchObject({ code: 0, stdout: 'again\n', stderr: '' });
  });

  it('cuts a session at its maximum duration: the caller sees the end, the cluster session closes', async () => {
    const t = await openArgoTerminal(await terminalSecret(h), { namespace: 'demo', pod: demoPod(h) });
    const opened = Date.now();
    await t.closed;
    expect(Date.now() - opened).toBeGreaterThanOrEqual(5_000);
    await waitFor(() => ended.some((r) => r.ended === 'max-duration'), 30_000);
    expect(ended.find((r) => r.ended === 'max-duration')).toMatchObject({
      kind: 'exec',
      status: 101,
      pod: demoPod(h),
    });
    const session = h.cluster.streamSessions().at(-1)!;
    await waitFor(() => session.endedAt !== undefined, 30_000);
    expect(session.endedAt).toBeDefined();
  }, 60_000);
});

describe("Argo CD's terminal with impersonation allowed, cut after 5 s without a byte", () => {
  let h: Harness;
  const ended: SessionRecord[] = [];
  beforeAll(async () => {
    h = await startHarness({
      exec: { enabled: true, idleTimeoutMs: 5_000 },
      onSession: (r) => ended.push(r),
      impersonators: ['argocd-server'],
      requestTimeout: '30s',
    });
    h.cluster.setRbac(AGENT_SERVICE_ACCOUNT_USER, [
      ...FULL_ACCESS_RULES,
      { verbs: ['impersonate'], apiGroups: [''], resources: ['users'] },
    ]);
    // alice may look at pods but not exec into them; bob may do everything.
    h.cluster.setRbac('alice', [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }]);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    if (h) rmSync(h.dir, { recursive: true, force: true });
  });

  it("runs the session as the impersonated user, and passes the cluster's own refusal on", async () => {
    const secret = await terminalSecret(h);
    const t = await openArgoTerminal(secret, { namespace: 'demo', pod: demoPod(h), impersonate: 'bob' });
    t.type('exit\r');
    await t.closed;
    expect(h.cluster.streamSessions().at(-1)).toMatchObject({ user: 'bob', kind: 'exec' });
    const refused = await refusal(
      openArgoTerminal(secret, { namespace: 'demo', pod: demoPod(h), impersonate: 'alice' }),
    );
    expect(refused).toMatchObject({
      statusCode: 403,
      body: { kind: 'Status', code: 403, reason: 'Forbidden' },
    });
    expect(refused!.body.message).toMatch(/User "alice" cannot (get|create) resource "pods\/exec"/);
    expect(h.cluster.streamSessions().filter((s) => s.user === 'alice')).toEqual([]);
  });

  it('cuts a session idle in both directions, not one that is busy', async () => {
    const t = await openArgoTerminal(await terminalSecret(h), { namespace: 'demo', pod: demoPod(h) });
    // Keys every second keep it open past the idle timeout.
    for (let i = 0; i < 5; i++) {
      t.type(`echo tick${i}\r`);
      await waitFor(() => t.shown().includes(`tick${i}\r\n`), 30_000);
      await new Promise((r) => setTimeout(r, 1_000)); // wait-ok: the activity under test is paced
    }
    expect(ended.filter((r) => r.ended === 'idle')).toEqual([]);
    await t.closed;
    await waitFor(() => ended.some((r) => r.ended === 'idle'), 30_000);
    expect(ended.find((r) => r.ended === 'idle')).toMatchObject({ kind: 'exec', status: 101 });
  }, 60_000);
});
