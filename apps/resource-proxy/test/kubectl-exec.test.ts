import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { clusterSecret } from '@pullplane/registration';
import {
  AGENT_SERVICE_ACCOUNT_USER,
  downloadPattern,
  httpGet,
  kubectlInvocation,
  kubectlOnTerminal,
  liveBytes,
  openArgoTerminal,
  runKubectl,
  spawnKubectl,
  waitFor,
} from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

/**
 * Real kubectl through the resource proxy, a gateway and an agent with exec enabled, to the
 * Kubernetes API stand-in: exec, cp, attach and port-forward over WebSocket (kubectl's default)
 * and SPDY/3.1 (its fallback), the cluster seeing the agent's credentials only.
 */
const MiB = 1024 * 1024;
const TRANSPORTS = [
  { name: 'WebSocket', env: {}, protocol: 'v5.channel.k8s.io' },
  {
    name: 'SPDY/3.1',
    env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' },
    protocol: 'v4.channel.k8s.io',
  },
];

let h: Harness;
let pod: string;
beforeAll(async () => {
  // A loaded machine may take seconds to set a session up (the managed check, the upgrade).
  h = await startHarness({ exec: { enabled: true }, requestTimeout: '30s' });
  pod = h.cluster.store
    .list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
    .find((p) => p.metadata.name?.startsWith('guestbook'))!.metadata.name!;
}, 60_000);
afterAll(async () => {
  await h?.close();
  if (h) rmSync(h.dir, { recursive: true, force: true });
});

const sessionLines = () => h.lines.filter((l) => typeof l.session === 'string');

describe.each(TRANSPORTS)('kubectl through the tunnel over $name', ({ name, env, protocol }) => {
  const run = (args: string[], input?: string) =>
    runKubectl(['-n', 'demo', ...args], { kubeconfig: h.certKubeconfig, env, input, timeoutMs: 60_000 });

  it("exec -- echo prints the output; the cluster sees the agent's credentials and the proxy audits the session", async () => {
    const before = h.cluster.streamSessions().length;
    const r = await run(['exec', pod, '--', 'echo', 'hi', 'there']);
    expect(r).toMatchObject({ code: 0, stdout: 'hi there\n' });
    const session = h.cluster.streamSessions().at(-1)!;
    expect(h.cluster.streamSessions()).toHaveLength(before + 1);
    expect(session).toMatchObject({
      kind: 'exec',
      protocol,
      pod,
      command: ['echo', 'hi', 'there'],
      user: AGENT_SERVICE_ACCOUNT_USER,
      exitCode: 0,
    });
    await waitFor(() => sessionLines().some((l) => l.requestId && (l.command as string[])?.[1] === 'hi'));
    const line = sessionLines().find((l) => (l.command as string[])?.[1] === 'hi' && l.status === 101)!;
    expect(line).toMatchObject({
      msg: 'resource proxy exec session',
      caller: 'agent-a',
      agent: 'agent-a',
      namespace: 'demo',
      pod,
      container: 'guestbook',
      command: ['echo', 'hi', 'there'],
      status: 101,
    });
    expect(line.bytesIn).toBeGreaterThan(0);
    expect(line.bytesOut).toBeGreaterThan(0);
    expect(line.durationMs).toBeGreaterThanOrEqual(0);
    h.lines.length = 0;
  });

  it('propagates the exit code, with stdout and stderr apart', async () => {
    const r = await run(['exec', pod, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
    expect(r).toEqual({ code: 3, stdout: 'out\n', stderr: 'err\ncommand terminated with exit code 3\n' });
  });

  it('pipes 50 MiB through cat byte-exact while the whole chain holds only a little of it', async () => {
    const file = path.join(h.dir, 'in.bin');
    writeFileSync(file, randomBytes(50 * MiB));
    const want = createHash('sha256').update(readFileSync(file)).digest('hex');
    const inv = kubectlInvocation(['-n', 'demo', 'exec', '-i', pod, '--', 'cat'], {
      kubeconfig: h.certKubeconfig,
      env,
    });
    const child = spawn(inv.binary, inv.args, { env: inv.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const hash = createHash('sha256');
    let bytes = 0;
    child.stdout.on('data', (c: Buffer) => {
      hash.update(c);
      bytes += c.length;
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const base = liveBytes();
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, liveBytes() - base);
    }, 2000);
    child.stdin.on('error', () => undefined); // kubectl's own exit says what went wrong
    createReadStream(file).pipe(child.stdin);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearInterval(sampler);
    expect({ code, stderr, bytes }).toEqual({ code: 0, stderr: '', bytes: 50 * MiB });
    expect(hash.digest('hex')).toBe(want);
    // The proxy, gateway, agent and stand-in all live in this process: none held the 50 MiB.
    expect(peak).toBeLessThan(40 * MiB);
    rmSync(file);
  }, 180_000);

  it('cp copies a directory into the pod and back, byte-exact', async () => {
    const dir = path.join(h.dir, `cp-${protocol}`);
    const src = path.join(dir, 'src');
    mkdirSync(path.join(src, 'nested'), { recursive: true });
    writeFileSync(path.join(src, 'a.txt'), 'alpha\n');
    const blob = randomBytes(300_000);
    writeFileSync(path.join(src, 'nested', 'blob.bin'), blob);
    const remote = `/tmp/copied-${name.replace(/\W/g, '')}`;
    expect(await run(['cp', src, `${pod}:${remote}`])).toMatchObject({ code: 0, stderr: '' });
    expect((await run(['exec', pod, '--', 'ls', `${remote}/nested`])).stdout).toBe('blob.bin\n');
    const back = path.join(dir, 'back');
    expect((await run(['cp', `${pod}:${remote}`, back])).code).toBe(0);
    expect(readFileSync(path.join(back, 'a.txt'), 'utf8')).toBe('alpha\n');
    expect(readFileSync(path.join(back, 'nested', 'blob.bin')).equals(blob)).toBe(true);
  });

  it('attach -i reaches the main process, and the session ends when kubectl does', async () => {
    const attach = spawnKubectl(['-n', 'demo', 'attach', '-i', pod], {
      kubeconfig: h.certKubeconfig,
      env,
      input: 'hello attach\n',
    });
    try {
      await attach.waitFor('hello attach\n', 30_000);
      h.cluster.store.appendPodLog('demo', pod, 'from the app');
      await attach.waitFor('from the app\n', 30_000);
    } finally {
      await attach.stop();
    }
    const session = h.cluster
      .streamSessions()
      .filter((s) => s.kind === 'attach')
      .at(-1)!;
    await waitFor(() => session.endedAt !== undefined, 30_000);
    expect(session).toMatchObject({ pod, user: AGENT_SERVICE_ACCOUNT_USER });
  });

  it('exec -it: the terminal size reaches the API, keys are echoed, the exit code comes back', async () => {
    const t = kubectlOnTerminal(['-n', 'demo', 'exec', '-it', pod, '--', 'sh'], {
      kubeconfig: h.certKubeconfig,
      env,
    });
    try {
      await waitFor(() => t.shown().includes('/ # '), 30_000);
      t.type('stty size\r');
      await waitFor(() => t.shown().includes('stty size\r\n22 111\r\n'), 30_000);
      t.type('exit 4\r');
      expect(await t.exited).toBe(4);
    } finally {
      t.kill();
    }
    const session = h.cluster.streamSessions().at(-1)!;
    expect(session).toMatchObject({ tty: true, exitCode: 4 });
    expect(session.resizes[0]).toEqual({ width: 111, height: 22 });
  });

  it('port-forward: 20 parallel HTTP requests and a 100 MiB download', async () => {
    const pf = spawnKubectl(['-n', 'demo', 'port-forward', `pod/${pod}`, ':8080'], {
      kubeconfig: h.certKubeconfig,
      env,
    });
    try {
      const out = await pf.waitFor(/-> 8080\n/, 30_000);
      const port = Number(/127\.0\.0\.1:(\d+) -> 8080/.exec(out)![1]);
      const answers = await Promise.all(Array.from({ length: 20 }, () => httpGet(port, '/')));
      for (const a of answers)
        expect({ status: a.status, body: a.body.toString() }).toEqual({
          status: 200,
          body: `Hello from ${pod} in demo (port 8080)\n`,
        });
      expect(await downloadPattern(port, 100 * MiB)).toEqual({ bytes: 100 * MiB, mismatches: 0 });
    } finally {
      await pf.stop();
    }
  }, 180_000);
});

describe('refusals through the tunnel', () => {
  it('an unmanaged pod is not found, as for reads, and the cluster is never asked to upgrade', async () => {
    h.cluster.clearRequests();
    const r = await runKubectl(['-n', 'demo', 'exec', 'debug-shell', '--', 'echo', 'x'], {
      kubeconfig: h.certKubeconfig,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('Error from server (NotFound): resource not managed by app\n');
    // kubectl read the pod first and stopped there; a client that upgrades straight away (as
    // Argo CD's terminal does) meets the agent's own check.
    const secret = clusterSecret({
      agent: 'agent-a',
      namespace: 'argocd',
      server: `${h.proxyUrl}/clusters/agent-a`,
      caPem: h.pki.ca.certPem,
      credentials: { bearerToken: await h.tokens.issue('argocd-server', { agents: ['agent-a'] }) },
      fingerprint: 'test',
    });
    const refused = await openArgoTerminal(secret, { namespace: 'demo', pod: 'debug-shell' }).then(
      () => undefined,
      (err: { statusCode: number; body: string }) => ({
        statusCode: err.statusCode,
        body: JSON.parse(err.body),
      }),
    );
    expect(refused).toMatchObject({
      statusCode: 404,
      body: { kind: 'Status', code: 404, reason: 'NotFound', message: 'resource not managed by app' },
    });
    expect(h.cluster.requests.filter((q) => q.path.endsWith('/exec'))).toEqual([]);
    expect(h.cluster.streamSessions().filter((s) => s.pod === 'debug-shell')).toEqual([]);
  });
});

describe("Argo CD's web terminal through the resource proxy (a stand-in, with a cluster Secret)", () => {
  const secretFor = async (caller: string, agents: string[]) =>
    clusterSecret({
      agent: 'agent-a',
      namespace: 'argocd',
      server: `${h.proxyUrl}?agentName=agent-a`,
      caPem: h.pki.ca.certPem,
      credentials: { bearerToken: await h.tokens.issue(caller, { agents }) },
      fingerprint: 'test',
    });

  it('opens a shell on v5.channel.k8s.io: keys, the terminal size and the exit status all cross', async () => {
    const t = await openArgoTerminal(await secretFor('argocd-server', ['agent-a']), {
      namespace: 'demo',
      pod,
      command: ['sh'],
    });
    expect(t.protocol).toBe('v5.channel.k8s.io');
    t.resize(132, 40);
    await waitFor(() => t.shown().includes('/ # '), 30_000);
    t.type('stty size\r');
    await waitFor(() => t.shown().includes('40 132'), 30_000);
    t.type('exit 5\r');
    await t.closed;
    expect(t.status()).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '5' }] },
    });
    const session = h.cluster.streamSessions().at(-1)!;
    expect(session).toMatchObject({ kind: 'exec', tty: true, exitCode: 5, user: AGENT_SERVICE_ACCOUNT_USER });
    expect(session.resizes).toContainEqual({ width: 132, height: 40 });
    await waitFor(() => sessionLines().some((l) => l.caller === 'argocd-server' && l.status === 101));
  });

  it("a caller not bound to the agent gets the proxy's 403 Status and reaches no agent", async () => {
    h.cluster.clearRequests();
    const refused = await openArgoTerminal(await secretFor('other-argocd', ['agent-b']), {
      namespace: 'demo',
      pod,
    }).then(
      () => undefined,
      (err: { statusCode: number; body: string }) => err,
    );
    expect(refused?.statusCode).toBe(403);
    expect(JSON.parse(refused!.body)).toMatchObject({
      kind: 'Status',
      code: 403,
      reason: 'Forbidden',
      details: { causes: [{ reason: 'RESOURCE_PROXY_NOT_BOUND' }] },
    });
    expect(h.cluster.requests).toEqual([]);
  });
});
