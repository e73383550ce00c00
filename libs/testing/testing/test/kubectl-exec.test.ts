import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectlInvocation, liveBytes, makeTempDir, runKubectl, spawnKubectl } from '../src/index.js';
import { eventually, type KubeFixture, startKubeFixture } from './kube-helpers.js';
import { runningPod } from './support/stream-clients.js';

/**
 * Real kubectl 1.32 against the stand-in, straight (no tunnel): exec, cp and attach over the
 * WebSocket v5 protocol it uses by default and over SPDY/3.1 it falls back to (forced with
 * KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false).
 */
const TRANSPORTS = [
  { name: 'WebSocket v5', env: {}, transport: 'websocket', protocol: 'v5.channel.k8s.io', method: 'GET' },
  {
    name: 'SPDY/3.1',
    env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' },
    transport: 'spdy',
    protocol: 'v4.channel.k8s.io',
    method: 'POST',
  },
];

const MiB = 1024 * 1024;

describe.each(TRANSPORTS)(
  'kubectl exec, cp and attach over $name',
  ({ env, transport, protocol, method }) => {
    let kube: KubeFixture;
    const run = (args: string[], input?: string) =>
      runKubectl(['-n', 'shells', ...args], { kubeconfig: kube.kubeconfig, env, input, timeoutMs: 60_000 });

    beforeAll(async () => {
      kube = await startKubeFixture({ gitVersion: 'v1.32.4' });
      kube.server.store.put(runningPod('shells', 'box'));
    });
    afterAll(() => kube.server.close());

    it('exec -- echo prints the output and exits 0', async () => {
      const r = await run(['exec', 'box', '--', 'echo', 'hi', 'there']);
      expect(r).toMatchObject({ code: 0, stdout: 'hi there\n' });
      const session = kube.server.streamSessions().at(-1)!;
      expect(session).toMatchObject({
        kind: 'exec',
        transport,
        protocol,
        command: ['echo', 'hi', 'there'],
        exitCode: 0,
      });
      expect(
        kube.server.requests.filter((q) => q.path.endsWith('/box/exec')).map((q) => [q.method, q.status]),
      ).toContainEqual([method, 101]);
    });

    it('propagates the exit code, with stdout and stderr apart', async () => {
      const r = await run(['exec', 'box', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
      expect(r.code).toBe(3);
      expect(r.stdout).toBe('out\n');
      expect(r.stderr).toBe('err\ncommand terminated with exit code 3\n');
    });

    it('an unknown command is the runtime error kubectl prints for it', async () => {
      const r = await run(['exec', 'box', '--', 'nosuch']);
      expect(r.code).toBe(1);
      // Over WebSocket the API server's translator wraps the kubelet's InternalError once more.
      const prefix = protocol.startsWith('v5')
        ? 'Internal error occurred: '.repeat(2)
        : 'Internal error occurred: ';
      expect(r.stderr).toMatch(
        new RegExp(
          `^error: ${prefix}error executing command in container: failed to exec in container: failed to start exec "[0-9a-f]{64}": OCI runtime exec failed: exec failed: unable to start container process: exec: "nosuch": executable file not found in \\$PATH: unknown\\n$`,
        ),
      );
    });

    it('pipes 50 MiB through cat byte-exact while the stand-in holds only a little of it', async () => {
      const dir = makeTempDir('exec-cat-');
      const file = join(dir, 'in.bin');
      writeFileSync(file, randomBytes(50 * MiB));
      const want = createHash('sha256').update(readFileSync(file)).digest('hex');
      const inv = kubectlInvocation(['-n', 'shells', 'exec', '-i', 'box', '--', 'cat'], {
        kubeconfig: kube.kubeconfig,
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
      }, 200);
      createReadStream(file).pipe(child.stdin);
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      clearInterval(sampler);
      expect({ code, stderr, bytes }).toEqual({ code: 0, stderr: '', bytes: 50 * MiB });
      expect(hash.digest('hex')).toBe(want);
      // Streaming, not buffering: the process never held the 50 MiB that went through. (Freed
      // buffers linger a little after a collection, so the bound has room; exec-websocket.test.ts
      // shows the stand-in's own bound exactly.)
      expect(peak).toBeLessThan(40 * MiB);
    }, 120_000);

    it('cp copies a directory into the pod and back, byte-exact', async () => {
      const dir = makeTempDir('cp-');
      const src = join(dir, 'src');
      mkdirSync(join(src, 'nested', 'x'.repeat(120)), { recursive: true });
      writeFileSync(join(src, 'a.txt'), 'alpha\n');
      const blob = randomBytes(300_000);
      writeFileSync(join(src, 'nested', 'blob.bin'), blob);
      writeFileSync(join(src, 'nested', 'x'.repeat(120), `${'y'.repeat(110)}.txt`), 'deep\n');
      const up = await run(['cp', src, 'box:/tmp/copied']);
      expect(up).toMatchObject({ code: 0, stderr: '' });
      expect((await run(['exec', 'box', '--', 'ls', '/tmp/copied', '/tmp/copied/nested'])).stdout).toBe(
        `/tmp/copied:\na.txt\nnested\n\n/tmp/copied/nested:\nblob.bin\n${'x'.repeat(120)}\n`,
      );
      const back = join(dir, 'back');
      const down = await run(['cp', 'box:/tmp/copied', back]);
      expect(down.code).toBe(0);
      // kubectl sends the remote tar's stderr to its stdout, GNU tar's warning included.
      expect(down.stdout).toBe("tar: Removing leading `/' from member names\n");
      expect(readFileSync(join(back, 'a.txt'), 'utf8')).toBe('alpha\n');
      expect(readFileSync(join(back, 'nested', 'blob.bin')).equals(blob)).toBe(true);
      expect(readFileSync(join(back, 'nested', 'x'.repeat(120), `${'y'.repeat(110)}.txt`), 'utf8')).toBe(
        'deep\n',
      );
      const single = join(dir, 'single.txt');
      expect((await run(['cp', 'box:/tmp/copied/a.txt', single])).code).toBe(0);
      expect(readFileSync(single, 'utf8')).toBe('alpha\n');
    });

    it('attach -i reaches the main process: typed lines come back and land in the log', async () => {
      const attach = spawnKubectl(['-n', 'shells', 'attach', '-i', 'box'], {
        kubeconfig: kube.kubeconfig,
        env,
        input: 'hello attach\n',
      });
      try {
        await attach.waitFor('hello attach\n');
        // Output the container writes on its own (its log) reaches attached clients live.
        kube.server.store.appendPodLog('shells', 'box', 'from the app');
        await attach.waitFor('from the app\n');
        expect(await kube.ok('-n', 'shells', 'logs', 'box')).toContain('hello attach\nfrom the app\n');
      } finally {
        await attach.stop();
      }
      // kubectl is gone: its session ends with it.
      const session = kube.server
        .streamSessions()
        .filter((s) => s.kind === 'attach')
        .at(-1)!;
      await eventually(() => expect(session.endedAt).toBeDefined(), 20_000);
    });
  },
);
