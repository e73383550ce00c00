import { defineOptions } from '@pullplane/config';

const descriptions = {
  min: "Oldest TLS version the listeners accept: tls1.1, tls1.2 or tls1.3 (argocd-agent's default).",
  max: 'Newest TLS version the listeners accept (default: the newest Node supports).',
  suites:
    "TLS 1.2 cipher suites by IANA name (as argocd-agent), e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256; TLS 1.3 suites stay on unless TLS 1.3 ones are listed. Default: Node's.",
} as const;

/** TLS version and cipher-suite flags of the principal services (shared names, as in argocd-agent). */
export const principalTlsProtocolOptions = defineOptions([
  {
    flag: 'tls-min-version',
    type: 'string',
    default: 'tls1.3',
    env: 'ARGOCD_PRINCIPAL_TLS_MIN_VERSION',
    paramsKey: 'principal.tls.min-version',
    description: descriptions.min,
  },
  {
    flag: 'tls-max-version',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_TLS_MAX_VERSION',
    paramsKey: 'principal.tls.max-version',
    description: descriptions.max,
  },
  {
    flag: 'tls-ciphersuites',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_TLS_CIPHERSUITES',
    paramsKey: 'principal.tls.ciphersuites',
    description: descriptions.suites,
  },
]);

/** The agent's TLS version and cipher-suite flags, towards the gateway. */
export const agentTlsProtocolOptions = defineOptions([
  {
    flag: 'tls-min-version',
    type: 'string',
    default: 'tls1.2',
    env: 'ARGOCD_AGENT_TLS_MIN_VERSION',
    paramsKey: 'agent.tls.min-version',
    description: 'Oldest TLS version the agent accepts from the gateway: tls1.1, tls1.2 or tls1.3.',
  },
  {
    flag: 'tls-max-version',
    type: 'string',
    env: 'ARGOCD_AGENT_TLS_MAX_VERSION',
    paramsKey: 'agent.tls.max-version',
    description: 'Newest TLS version the agent offers (default: the newest Node supports).',
  },
  {
    flag: 'tls-ciphersuites',
    type: 'list',
    env: 'ARGOCD_AGENT_TLS_CIPHERSUITES',
    paramsKey: 'agent.tls.ciphersuites',
    description: descriptions.suites,
  },
]);
