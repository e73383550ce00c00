import { defineOptions } from '@pullplane/config';

const description = {
  address:
    'OTLP/gRPC collector (host[:port], port 4317 by default) to export traces to; unset: no traces, no exporter, nothing on the hot path but one check.',
  insecure:
    'Export traces over plaintext gRPC instead of TLS (system roots, or OTEL_EXPORTER_OTLP_CERTIFICATE).',
};

/** Trace export on the principal services, under argocd-agent's principal env names. */
export const principalTracingOptions = defineOptions([
  {
    flag: 'otlp-address',
    type: 'host-port',
    defaultPort: 4317,
    env: 'ARGOCD_PRINCIPAL_OTLP_ADDRESS',
    description: description.address,
  },
  {
    flag: 'otlp-insecure',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_OTLP_INSECURE',
    description: description.insecure,
  },
]);

/** Trace export on the agent, under argocd-agent's agent env names. */
export const agentTracingOptions = defineOptions([
  {
    flag: 'otlp-address',
    type: 'host-port',
    defaultPort: 4317,
    env: 'ARGOCD_AGENT_OTLP_ADDRESS',
    description: description.address,
  },
  {
    flag: 'otlp-insecure',
    type: 'boolean',
    env: 'ARGOCD_AGENT_OTLP_INSECURE',
    description: description.insecure,
  },
]);
