import { join } from 'node:path';
import {
  type FakeKubeApiServer,
  type FakeKubeApiServerOptions,
  type KubectlResult,
  makeTempDir,
  runKubectl,
  spawnKubectl,
  startFakeKubeApiServer,
} from '../src/index.js';

export interface KubeFixture {
  server: FakeKubeApiServer;
  kubeconfig: string;
  kubectl(...args: string[]): Promise<KubectlResult>;
  /** kubectl that must succeed; returns stdout. */
  ok(...args: string[]): Promise<string>;
  kubectlWithInput(input: string, ...args: string[]): Promise<KubectlResult>;
  spawn(...args: string[]): ReturnType<typeof spawnKubectl>;
}

export async function startKubeFixture(opts: FakeKubeApiServerOptions = {}): Promise<KubeFixture> {
  const server = await startFakeKubeApiServer(opts);
  const kubeconfig = await server.writeKubeconfig(join(makeTempDir('kubeconfig-'), 'config'));
  const kubectl = (...args: string[]) => runKubectl(args, { kubeconfig });
  return {
    server,
    kubeconfig,
    kubectl,
    async ok(...args) {
      const r = await kubectl(...args);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}):\n${r.stderr}`);
      return r.stdout;
    },
    kubectlWithInput: (input, ...args) => runKubectl(args, { kubeconfig, input }),
    spawn: (...args) => spawnKubectl(args, { kubeconfig }),
  };
}

export async function eventually(check: () => void | Promise<void>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 25)); // wait-ok: poll interval of a loop that waits for the event under a deadline
    }
  }
}

export function pod(namespace: string, name: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: name.split('-')[0] ?? name } },
    spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] },
    status: { phase: 'Running' },
    ...extra,
  };
}
