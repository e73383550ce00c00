import { AgentCounterChildren, getOrCreateCounter } from '@pullplane/telemetry';
import type { Registry } from 'prom-client';
import { commandLabel } from './commands/table.js';

export interface ArgocdAgentRedisProxyMetrics {
  /** A command (or subscription stream) sent to `agent`; `failed`: the agent did not answer it. */
  command(agent: string, command: Buffer | string | undefined, failed: boolean): void;
  /** A failure after the fact (a subscription stream that broke). */
  failed(agent: string, command: string): void;
}

/**
 * argocd-agent's `argocd_principal_redis_proxy_requests_total{agent_name,command}` and
 * `…_errors_total{agent_name,command}` for what goes to agents, next to ours. Command names are
 * Redis' own (unknown ones share 'unknown'); agents not in presence share `_unknown`.
 */
export function argocdAgentRedisProxyMetrics(
  registry: Registry,
  isKnownAgent: (agent: string) => boolean,
): ArgocdAgentRedisProxyMetrics {
  const counter = (name: string, help: string) =>
    new AgentCounterChildren(
      getOrCreateCounter(registry, { name, help, labelNames: ['agent_name', 'command'] }, { prefix: false }),
      'command',
      isKnownAgent,
    );
  const requests = counter(
    'argocd_principal_redis_proxy_requests_total',
    'Redis commands and subscriptions forwarded to each agent (argocd-agent compatible).',
  );
  const errors = counter(
    'argocd_principal_redis_proxy_errors_total',
    'Redis commands and subscriptions an agent did not answer: not connected, timed out, failed (argocd-agent compatible).',
  );
  // Command names as sent (GET, get…) map to one label each; resolved once per spelling.
  const labels = new Map<string, string>();
  const label = (command: Buffer | string | undefined) => {
    const raw =
      command === undefined ? '' : typeof command === 'string' ? command : command.toString('latin1');
    let l = labels.get(raw);
    if (l === undefined) {
      l = raw === '' ? 'unknown' : commandLabel(raw.toLowerCase());
      if (labels.size < 1024) labels.set(raw, l);
    }
    return l;
  };
  return {
    command(agent, command, failed) {
      const l = label(command);
      requests.inc(agent, l);
      if (failed) errors.inc(agent, l);
    },
    failed(agent, command) {
      errors.inc(agent, label(command));
    },
  };
}
