import { freePort } from './free-port.js';
import { type NatsServerHandle, startNatsServer } from './nats-server.js';

export interface NatsClusterOptions {
  /** Nodes (default 3: the smallest cluster that keeps JetStream quorum with one node down). */
  size?: number;
  /** Cluster name (default "pullplane-test"). */
  name?: string;
  /** Per-node startup timeout (default 30 s: a node waits for its routes). */
  startTimeoutMs?: number;
}

export interface NatsClusterHandle {
  readonly nodes: readonly NatsServerHandle[];
  /** Every node's client URL, comma-separated, as the services' --nats-url takes them. */
  readonly urls: string;
  /** Resolves once the JetStream meta group has a leader that every running node knows. */
  ready(timeoutMs?: number): Promise<void>;
  /** Stops every node, then starts them all again on the same ports and stores. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

interface Jsz {
  meta_cluster?: { leader?: string };
}

/**
 * A JetStream cluster of real nats-server processes on loopback, routed to each other, each
 * with its own store: what a three-replica NATS StatefulSet looks like to the services. Nodes
 * start together (each waits for its peers before JetStream is up) and can be killed and
 * restarted one by one through `nodes`.
 */
export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsClusterHandle> {
  const size = options.size ?? 3;
  const name = options.name ?? 'pullplane-test';
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(',');
  const nodes = await Promise.all(
    ports.map((port, i) =>
      startNatsServer({
        port,
        startTimeoutMs: options.startTimeoutMs ?? 30_000,
        args: [
          '--server_name',
          `${name}-${i}`,
          '--cluster_name',
          name,
          '--cluster',
          `nats://127.0.0.1:${routePorts[i]}`,
          '--routes',
          routes,
        ],
      }),
    ),
  );
  const leaderSeenBy = async (node: NatsServerHandle): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz`);
    const jsz = (await res.json()) as Jsz;
    return jsz.meta_cluster?.leader ?? '';
  };
  const cluster: NatsClusterHandle = {
    nodes,
    urls: nodes.map((n) => n.url).join(','),
    async ready(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const running = nodes.filter((n) => n.isRunning());
        const leaders = await Promise.all(running.map((n) => leaderSeenBy(n).catch(() => '')));
        if (leaders.length > 0 && leaders[0] !== '' && leaders.every((l) => l === leaders[0])) return;
        if (Date.now() > deadline)
          throw new Error(`NATS cluster has no JetStream leader after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async restart() {
      await Promise.all(nodes.map((n) => n.stop()));
      await Promise.all(nodes.map((n) => n.restart()));
      await cluster.ready();
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  await cluster.ready();
  return cluster;
}
