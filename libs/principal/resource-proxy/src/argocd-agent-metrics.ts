import { AgentCounterChildren, getOrCreateCounter } from '@pullplane/telemetry';
import type { Registry } from 'prom-client';
import type { ProxyErrorName } from './errors.js';

/** argocd-agent's `reason` label for the failures that have one here (its queue_missing has no counterpart). */
const REASON: Partial<Record<ProxyErrorName, string>> = {
  NOT_CONNECTED: 'agent_disconnected',
  TIMEOUT: 'timeout',
  TUNNEL_LOST: 'channel_closed',
  CLUSTER_FAILED: 'agent_error',
  DISABLED: 'agent_error',
};

export interface ArgocdAgentResourceProxyMetrics {
  /** A request for `agent` from an authenticated caller. */
  request(agent: string): void;
  /** A request for `agent` that the agent did not answer (disconnected, timed out, failed). */
  failed(agent: string, failure: ProxyErrorName | 'MID_BODY'): void;
}

/**
 * argocd-agent's `argocd_principal_resource_proxy_requests_total{agent_name}` and
 * `…_errors_total{agent_name,reason}`, next to ours, so its dashboards keep working.
 */
export function argocdAgentResourceProxyMetrics(
  registry: Registry,
  isKnownAgent: (agent: string) => boolean,
): ArgocdAgentResourceProxyMetrics {
  const requests = new AgentCounterChildren(
    getOrCreateCounter(
      registry,
      {
        name: 'argocd_principal_resource_proxy_requests_total',
        help: 'Resource proxy requests received for each agent (argocd-agent compatible).',
        labelNames: ['agent_name'],
      },
      { prefix: false },
    ),
    undefined,
    isKnownAgent,
  );
  const errors = new AgentCounterChildren(
    getOrCreateCounter(
      registry,
      {
        name: 'argocd_principal_resource_proxy_errors_total',
        help: 'Resource proxy requests the agent did not answer, by reason: agent_disconnected, timeout, channel_closed, agent_error (argocd-agent compatible).',
        labelNames: ['agent_name', 'reason'],
      },
      { prefix: false },
    ),
    'reason',
    isKnownAgent,
  );
  return {
    request: (agent) => requests.inc(agent),
    failed(agent, failure) {
      const reason = failure === 'MID_BODY' ? 'channel_closed' : REASON[failure];
      if (reason) errors.inc(agent, reason);
    },
  };
}
