import { getOrCreateCounter, getOrCreateGauge } from '@pullplane/telemetry';
import type { Counter, Registry } from 'prom-client';

/** The hooks that feed argocd-agent's agent metrics. */
export interface ArgocdAgentAgentMetrics {
  connected(): void;
  rejected(): void;
  kubeRequest(refused: boolean): void;
  redisCommand(name: string, failed: boolean): void;
}

/**
 * argocd-agent's agent metrics next to ours: connection status and start time, connections,
 * authentication failures, and the resource-proxy and redis requests this agent served.
 * Command labels are the few commands the agent runs, so children are resolved once each.
 */
export function argocdAgentAgentMetrics(
  registry: Registry,
  isConnected: () => boolean,
): ArgocdAgentAgentMetrics {
  const exact = { prefix: false } as const;
  getOrCreateGauge(
    registry,
    {
      name: 'argocd_agent_connection_status',
      help: 'Whether the agent is connected to the principal: 1 connected, 0 not (argocd-agent compatible).',
      collect() {
        this.set(isConnected() ? 1 : 0);
      },
    },
    exact,
  );
  const started = getOrCreateGauge(
    registry,
    {
      name: 'argocd_agent_connection_start_timestamp_seconds',
      help: 'When the current tunnel to the principal was established, Unix seconds (argocd-agent compatible).',
    },
    exact,
  );
  const connections = getOrCreateCounter(
    registry,
    {
      name: 'argocd_agent_connections_total',
      help: 'Tunnels established to the principal (argocd-agent compatible).',
    },
    exact,
  );
  const authFailures = getOrCreateCounter(
    registry,
    {
      name: 'argocd_agent_auth_failures_total',
      help: "Connections the principal refused for this agent's credentials (argocd-agent compatible).",
    },
    exact,
  );
  const kubeRequests = getOrCreateCounter(
    registry,
    {
      name: 'argocd_agent_resource_proxy_requests_total',
      help: 'Kubernetes API requests served for the resource proxy (argocd-agent compatible).',
    },
    exact,
  );
  const kubeErrors = getOrCreateCounter(
    registry,
    {
      name: 'argocd_agent_resource_proxy_errors_total',
      help: 'Resource proxy requests this agent refused (no Kubernetes API, disabled) (argocd-agent compatible).',
    },
    exact,
  );
  const byCommand = (name: string, help: string) => {
    const counter: Counter<'command'> = getOrCreateCounter(
      registry,
      { name, help, labelNames: ['command'] },
      exact,
    );
    const children = new Map<string, { inc(): void }>();
    return (command: string) => {
      let child = children.get(command);
      if (!child) {
        child = counter.labels({ command });
        children.set(command, child);
      }
      child.inc();
    };
  };
  const redisRequests = byCommand(
    'argocd_agent_redis_proxy_requests_total',
    'Redis commands served for the redis proxy, by command (argocd-agent compatible).',
  );
  const redisErrors = byCommand(
    'argocd_agent_redis_proxy_errors_total',
    'Redis commands refused or not run (local Redis unavailable), by command (argocd-agent compatible).',
  );
  return {
    connected() {
      connections.inc();
      started.set(Date.now() / 1000);
    },
    rejected: () => authFailures.inc(),
    kubeRequest(refused) {
      kubeRequests.inc();
      if (refused) kubeErrors.inc();
    },
    redisCommand(name, failed) {
      redisRequests(name);
      if (failed) redisErrors(name);
    },
  };
}
