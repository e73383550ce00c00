import { connect, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadPattern as download, httpGet, spawnKubectl } from '../src/index.js';
import { eventually, type KubeFixture, startKubeFixture } from './kube-helpers.js';
import { runningPod } from './support/stream-clients.js';

/**
 * Real kubectl port-forward against the stand-in: tunnelled through a WebSocket (kubectl 1.31+),
 * and over SPDY/3.1 (kubectl 1.30, or 1.32 with KUBECTL_PORT_FORWARD_WEBSOCKETS=false). The fake
 * server's /version picks the kubectl release (the installed kubectl is a version dispatcher).
 */
const CASES = [
  { name: 'a WebSocket tunnel (kubectl 1.32)', gitVersion: 'v1.32.4', env: {}, transport: 'websocket' },
  {
    name: 'SPDY/3.1 (kubectl 1.32, WebSockets off)',
    gitVersion: 'v1.32.4',
    env: { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' },
    transport: 'spdy',
  },
  { name: 'SPDY/3.1 (kubectl 1.30)', gitVersion: 'v1.30.4', env: {}, transport: 'spdy' },
] as const;

const MiB = 1024 * 1024;

function echo(port: number, data: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const parts: Buffer[] = [];
    socket.on('data', (c: Buffer) => parts.push(c));
    socket.on('end', () => resolve(Buffer.concat(parts)));
    socket.on('error', reject);
    socket.end(data);
  });
}

describe.each(CASES)('kubectl port-forward over $name', ({ gitVersion, env, transport }) => {
  let kube: KubeFixture;
  let echoServer: Server;

  beforeAll(async () => {
    kube = await startKubeFixture({ gitVersion });
    kube.server.store.put(runningPod('web', 'app'));
    // A TCP echo server stands in for whatever listens on the pod's port 9000.
    echoServer = createServer((s) => s.pipe(s));
    await new Promise<void>((resolve) => echoServer.listen(0, '127.0.0.1', resolve));
    const { port } = echoServer.address() as { port: number };
    kube.server.forwardPodPort('web', 'app', 9000, { host: '127.0.0.1', port });
  });
  afterAll(async () => {
    await kube.server.close();
    await new Promise<void>((resolve) => echoServer.close(() => resolve()));
  });

  it('forwards several ports, 20 parallel HTTP requests, a 100 MiB download and raw TCP', async () => {
    const pf = spawnKubectl(['-n', 'web', 'port-forward', 'pod/app', ':8080', ':9000'], {
      kubeconfig: kube.kubeconfig,
      env,
    });
    try {
      const out = await pf.waitFor(/-> 9000\n/);
      const local = (remote: number) =>
        Number(new RegExp(`127\\.0\\.0\\.1:(\\d+) -> ${remote}`).exec(out)![1]);
      const http = local(8080);
      const tcp = local(9000);

      const answers = await Promise.all(Array.from({ length: 20 }, () => httpGet(http, '/')));
      for (const a of answers)
        expect({ status: a.status, body: a.body.toString() }).toEqual({
          status: 200,
          body: 'Hello from app in web (port 8080)\n',
        });

      expect(await download(http, 100 * MiB)).toEqual({ bytes: 100 * MiB, mismatches: 0 });

      const payloads = Array.from({ length: 5 }, (_, i) => Buffer.alloc(100_000 + i, i + 1));
      const echoed = await Promise.all(payloads.map((p) => echo(tcp, p)));
      expect(echoed.map((e, i) => e.equals(payloads[i]!))).toEqual(payloads.map(() => true));

      const sessions = kube.server.streamSessions().filter((s) => s.kind === 'portforward');
      // One upgrade, no fallback: the first transport kubectl tried was the one it kept.
      const upgrades = kube.server.requests.filter((r) => r.path.endsWith('/app/portforward'));
      expect(upgrades.map((r) => `${r.method} ${r.status}`)).toEqual([
        transport === 'websocket' ? 'GET 101' : 'POST 101',
      ]);
      expect(sessions).toHaveLength(1);
      expect(sessions[0]).toMatchObject({
        transport,
        protocol: transport === 'websocket' ? 'SPDY/3.1+portforward.k8s.io' : 'portforward.k8s.io',
      });
      expect(sessions[0]!.ports.sort()).toEqual([8080, 9000]);
      expect(sessions[0]!.connections).toBe(26);
    } finally {
      await pf.stop();
    }
    await eventually(() => expect(kube.server.activeStreamSessions()).toBe(0), 20_000);
  }, 120_000);

  it('a port nothing listens on: the kubelet’s connection-refused error reaches kubectl', async () => {
    const pf = spawnKubectl(['-n', 'web', 'port-forward', 'pod/app', ':7777'], {
      kubeconfig: kube.kubeconfig,
      env,
    });
    try {
      const out = await pf.waitFor(/-> 7777\n/);
      const port = Number(/127\.0\.0\.1:(\d+) -> 7777/.exec(out)![1]);
      await httpGet(port, '/').catch(() => undefined);
      await eventually(() =>
        // kubectl logs the message quoted, its inner quotes escaped.
        expect(pf.stderr().replace(/\\"/g, '"')).toMatch(
          /an error occurred forwarding \d+ -> 7777: error forwarding port 7777 to pod [0-9a-f]{64}, uid : failed to execute portforward in network namespace "[^"]+": failed to connect to localhost:7777 inside namespace "[0-9a-f]{64}", IPv4: dial tcp4 127\.0\.0\.1:7777: connect: connection refused/,
        ),
      );
    } finally {
      await pf.stop();
    }
  });
});
