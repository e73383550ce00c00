import { freePorts } from './free-port.js';
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
  /** Resolves once every running node knows the same JetStream meta leader and each stream it holds has a leader. */
  ready(timeoutMs?: number): Promise<void>;
  /** Stops every node, then starts them all again on the same ports and stores. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

interface Jsz {
  meta_cluster?: { leader?: string };
  account_details?: Array<{ stream_detail?: Array<{ name: string; cluster?: { leader?: string } }> }>;
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
  // All asked for together: distinct, as every node's client and route ports must be.
  const all = await freePorts(2 * size);
  const ports = all.slice(0, size);
  const routePorts = all.slice(size);
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
  // The meta leader this node sees, or '' while it sees none or while a stream it holds has no
  // leader yet: after a restart the meta group elects first, and each stream's own group later;
  // until then reads of that stream fail with "JetStream system temporarily unavailable".
  // Leaders count only when running: just after a node is killed, the survivors still name it
  // for a moment.
  const leaderSeenBy = async (node: NatsServerHandle, running: Set<string>): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz?streams=true`);
    const jsz = (await res.json()) as Jsz;
    const streams = (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
    if (streams.some((st) => !running.has(st.cluster?.leader ?? ''))) return '';
    const leader = jsz.meta_cluster?.leader ?? '';
    return running.has(leader) ? leader : '';
  };
  const cluster: NatsClusterHandle = {
    nodes,
    urls: nodes.map((n) => n.url).join(','),
    async ready(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const running = nodes.filter((n) => n.isRunning());
        const runningNames = new Set(nodes.flatMap((n, i) => (n.isRunning() ? [`${name}-${i}`] : [])));
        const leaders = await Promise.all(running.map((n) => leaderSeenBy(n, runningNames).catch(() => '')));
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
