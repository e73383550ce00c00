import { AgentCounterChildren, getOrCreateCounter, getOrCreateGauge } from '@pullplane/telemetry';
import type { Registry } from 'prom-client';

/** argocd-agent's principal metrics for the tunnels this gateway holds, next to ours. */
export interface ArgocdAgentGatewayMetrics {
  /** An agent's tunnel was established here. */
  connected(agent: string): void;
}

/**
 * `argocd_principal_connected_agents` (this replica's tunnels: sum over replicas for the
 * principal's total) and `argocd_principal_agent_connections_total{agent_name}` (only
 * authenticated agents reach it, so the series are bounded by the agents).
 */
export function argocdAgentGatewayMetrics(
  registry: Registry,
  sessions: () => number,
  agents: () => Iterable<string>,
): ArgocdAgentGatewayMetrics {
  // Which agents this replica holds right now: an agent that had a tunnel somewhere and has
  // none anywhere is "disconnected" (deploy/components/monitoring alerts on it).
  getOrCreateGauge(registry, {
    name: 'gateway_agent_tunnel',
    help: 'One series per agent whose tunnel this gateway holds (value 1); gone when the tunnel is.',
    labelNames: ['agent_name'],
    collect() {
      this.reset();
      for (const agent of agents()) this.set({ agent_name: agent }, 1);
    },
  });
  getOrCreateGauge(
    registry,
    {
      name: 'argocd_principal_connected_agents',
      help: 'Agents whose tunnel this gateway holds (argocd-agent compatible; sum over replicas).',
      collect() {
        this.set(sessions());
      },
    },
    { prefix: false },
  );
  const connections = new AgentCounterChildren(
    getOrCreateCounter(
      registry,
      {
        name: 'argocd_principal_agent_connections_total',
        help: 'Successful tunnel connections of each agent to this gateway (argocd-agent compatible).',
        labelNames: ['agent_name'],
      },
      { prefix: false },
    ),
  );
  return { connected: (agent) => connections.inc(agent) };
}
