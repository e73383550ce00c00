import type { Metadata } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, type AgentOptions } from '@pullplane/agent-core';
import type { TunnelCredentials } from '@pullplane/grpc-frames';
import { type FakeKubeApiServer, seedArgoDemo, startFakeKubeApiServer } from '@pullplane/testing';
import type { Logger } from 'pino';

export interface AgentCredentials {
  credentials: TunnelCredentials;
  metadata?: () => Metadata | Promise<Metadata>;
  serverNameOverride?: string;
}

export interface FleetOptions {
  names: readonly string[];
  /** host:port of the gateway. */
  target: string;
  credentialsFor: (name: string) => Promise<AgentCredentials>;
  /**
   * `per-agent`: each agent gets its own simulated cluster seeded with Argo CD demo apps;
   * `shared`: one simulated cluster for all (scale tests); `none`: tunnels only.
   */
  clusters: 'per-agent' | 'shared' | 'none';
  heartbeatIntervalMs: number;
  logger: Logger;
  agentVersion?: string;
  /** exec, attach and port-forward on every agent (off unless given, as on a real agent). */
  exec?: AgentOptions['exec'];
  /** Extra stream handlers per agent (e.g. the redis executor). */
  handlersFor?: (name: string) => AgentOptions['handlers'];
  /**
   * Bounds on what each simulated cluster remembers (its request log, its watch history), so a
   * long run's memory is the agents' and not the clusters' growing records.
   */
  clusterMemory?: { maxRequestLog: number; historySize: number };
}

export interface SimulatedAgent {
  name: string;
  agent: Agent;
  cluster?: FakeKubeApiServer;
}

export interface Fleet {
  agents: SimulatedAgent[];
  /** Resolves when every agent holds a tunnel (or rejects after `timeoutMs`). */
  connected(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

function kubeConfigFor(cluster: FakeKubeApiServer): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  return kc;
}

/** Starts agents (and their simulated clusters) in this process. */
export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  const clusters: FakeKubeApiServer[] = [];
  const newCluster = async () => {
    const c = await startFakeKubeApiServer(opts.clusterMemory ?? {});
    seedArgoDemo(c.store);
    clusters.push(c);
    return c;
  };
  const shared = opts.clusters === 'shared' ? await newCluster() : undefined;
  const agents: SimulatedAgent[] = [];
  for (const name of opts.names) {
    const cluster = opts.clusters === 'per-agent' ? await newCluster() : shared;
    const creds = await opts.credentialsFor(name);
    const agent = new Agent({
      agentName: name,
      agentVersion: opts.agentVersion ?? 'simulated',
      target: opts.target,
      ...creds,
      heartbeatIntervalMs: opts.heartbeatIntervalMs,
      keepAlivePingIntervalMs: 0,
      ...(cluster ? { kubeConfig: kubeConfigFor(cluster) } : {}),
      enableResourceProxy: cluster !== undefined,
      ...(opts.exec ? { exec: opts.exec } : {}),
      logger: opts.logger.child({ agent: name }),
      ...(opts.handlersFor ? { handlers: opts.handlersFor(name) } : {}),
    });
    agent.start();
    agents.push({ name, agent, ...(cluster ? { cluster } : {}) });
  }
  return {
    agents,
    async connected(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!agents.every((a) => a.agent.ready)) {
        if (Date.now() > deadline) {
          const missing = agents.filter((a) => !a.agent.ready).map((a) => a.name);
          throw new Error(`agents not connected after ${timeoutMs} ms: ${missing.slice(0, 10).join(', ')}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      await Promise.all(agents.map((a) => a.agent.stop()));
      await Promise.all(clusters.map((c) => c.close()));
    },
  };
}
