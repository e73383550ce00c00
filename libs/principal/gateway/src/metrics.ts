import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { type ArgocdAgentGatewayMetrics, argocdAgentGatewayMetrics } from './argocd-agent-metrics.js';

export interface GatewayMetrics {
  connectedAgents: Gauge;
  authFailures: Counter<'code'>;
  forwardedStreams: Counter;
  forwardRejected: Counter<'code'>;
  linksOpen: Gauge;
  relayedStreams: Gauge;
  localStreams: Counter;
  heartbeatRtt: Histogram;
  internalAuthFailures: Counter<'code'>;
  strayCalls: Counter<'listener'>;
  tunnelReplacements: Counter;
  tunnelFlapping: Counter;
  agentViolations: Counter<'agent' | 'kind'>;
  violationDisconnects: Counter<'agent'>;
  relayBudgetResets: Counter<'scope'>;
  /** argocd-agent's names for the same facts. */
  argocdAgent: ArgocdAgentGatewayMetrics;
}

function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[] = [],
): Counter<L> {
  return (
    (registry.getSingleMetric(name) as Counter<L> | undefined) ??
    new Counter({ name, help, labelNames, registers: [registry] })
  );
}

/** Metrics are looked up before creation: the all-in-one mode shares one registry. */
function gauge(registry: Registry, name: string, help: string, collect?: () => number): Gauge {
  return (
    (registry.getSingleMetric(name) as Gauge | undefined) ??
    new Gauge({
      name,
      help,
      registers: [registry],
      ...(collect
        ? {
            collect(this: Gauge) {
              this.set(collect());
            },
          }
        : {}),
    })
  );
}

export function createGatewayMetrics(
  registry: Registry,
  sessions: () => number,
  agents: () => Iterable<string> = () => [],
  relayBuffered: () => number = () => 0,
): GatewayMetrics {
  gauge(
    registry,
    'pullplane_gateway_relay_buffered_bytes',
    'Payload bytes relayed between proxy links and agent tunnels and not yet taken by the transport.',
    relayBuffered,
  );
  const name = 'pullplane_gateway_connected_agents';
  const connectedAgents =
    (registry.getSingleMetric(name) as Gauge | undefined) ??
    new Gauge({
      name,
      help: 'Agents whose tunnel this gateway holds.',
      registers: [registry],
      collect() {
        this.set(sessions());
      },
    });
  return {
    connectedAgents,
    argocdAgent: argocdAgentGatewayMetrics(registry, sessions, agents),
    authFailures: counter(
      registry,
      'pullplane_gateway_auth_failures_total',
      'Rejected agent connections by reason.',
      ['code'],
    ),
    forwardedStreams: counter(
      registry,
      'pullplane_gateway_forwarded_streams_total',
      'Logical streams opened for proxy replicas over the internal listener.',
    ),
    forwardRejected: counter(
      registry,
      'pullplane_gateway_forward_rejected_total',
      'Streams a proxy link opened that the gateway refused (agent not here, tunnel full…).',
      ['code'],
    ),
    linksOpen: gauge(
      registry,
      'pullplane_gateway_links_open',
      'Persistent links from proxy replicas open now.',
    ),
    relayedStreams: gauge(
      registry,
      'pullplane_gateway_relayed_streams',
      'Logical streams being relayed now between proxy links and agent tunnels.',
    ),
    localStreams: counter(
      registry,
      'pullplane_gateway_local_streams_total',
      'Logical streams opened in-process.',
    ),
    internalAuthFailures: counter(
      registry,
      'pullplane_gateway_internal_auth_failures_total',
      'Link calls refused on the internal listener (no or wrong credentials, not allowed).',
      ['code'],
    ),
    strayCalls: counter(
      registry,
      'pullplane_gateway_stray_calls_total',
      'Calls to a method the listener does not serve (Link on the agent listener, Connect on the internal one, the retired Forward on both).',
      ['listener'],
    ),
    tunnelReplacements: counter(
      registry,
      'pullplane_gateway_tunnel_replacements_total',
      'Live agent tunnels replaced by a newer connection of the same agent (here or elsewhere).',
    ),
    tunnelFlapping: counter(
      registry,
      'pullplane_gateway_tunnel_flapping_total',
      'Security events: an agent tunnel replaced back and forth between holders of the same credentials.',
    ),
    agentViolations: counter(
      registry,
      'pullplane_gateway_agent_violations_total',
      'Tunnel protocol violations by agents (oversized frames, credit overruns, frames after the end or for unknown streams); each reset the stream it concerned.',
      ['agent', 'kind'],
    ),
    violationDisconnects: counter(
      registry,
      'pullplane_gateway_agent_violation_disconnects_total',
      'Security events: agent tunnels closed because the agent kept breaking the protocol.',
      ['agent'],
    ),
    relayBudgetResets: counter(
      registry,
      'pullplane_gateway_relay_budget_resets_total',
      "Relayed streams reset because they would have taken the agent's share (scope=agent) or the whole relay budget (scope=process) past its limit.",
      ['scope'],
    ),
    heartbeatRtt:
      (registry.getSingleMetric('pullplane_gateway_heartbeat_rtt_seconds') as Histogram | undefined) ??
      new Histogram({
        name: 'pullplane_gateway_heartbeat_rtt_seconds',
        help: 'Round trip of gateway-to-agent heartbeats over the tunnel.',
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
        registers: [registry],
      }),
  };
}
