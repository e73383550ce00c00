import { defineOptions } from '@pullplane/config';

/**
 * The gateway-client flags every proxy replica carries (`GatewayClientFlags`), under its own
 * env (ARGOCD_PRINCIPAL_<COMPONENT>_GATEWAY_*) and params keys (principal.<component>.gateway.*).
 */
export function gatewayClientOptions(component: 'resource-proxy' | 'redis-proxy' | 'extension-proxy') {
  const env = `ARGOCD_PRINCIPAL_${component.toUpperCase().replaceAll('-', '_')}_GATEWAY`;
  const params = `principal.${component}.gateway`;
  return defineOptions([
    {
      flag: 'gateway-cert-path',
      type: 'file',
      env: `${env}_CERT_PATH`,
      paramsKey: `${params}.cert-path`,
      description:
        "Proxy certificate this replica presents to gateways' internal listeners (URI SAN spiffe://pullplane/proxy/<name>: `pullplane cert create --kind proxy`). With --gateway-ca-path, the three files are re-read every minute and new connections use what they hold.",
    },
    {
      flag: 'gateway-key-path',
      type: 'file',
      env: `${env}_KEY_PATH`,
      paramsKey: `${params}.key-path`,
      description: 'Private key of --gateway-cert-path.',
    },
    {
      flag: 'gateway-ca-path',
      type: 'file',
      env: `${env}_CA_PATH`,
      paramsKey: `${params}.ca-path`,
      description: "CA that verifies the gateways' certificates.",
    },
    {
      flag: 'gateway-server-name',
      type: 'string',
      env: `${env}_SERVER_NAME`,
      paramsKey: `${params}.server-name`,
      description:
        "Name verified in gateways' certificates (gateways are dialled by pod IP), e.g. argocd-agent-principal-internal.",
    },
    {
      flag: 'gateway-links',
      type: 'int',
      default: 2,
      min: 1,
      max: 16,
      env: `${env}_LINKS`,
      paramsKey: `${params}.links`,
      description:
        'Persistent links (HTTP/2 streams carrying every request) this replica keeps to each gateway; more spread a busy gateway over more connections.',
    },
    {
      flag: 'gateway-link-max-age',
      type: 'duration',
      default: '1h',
      min: '1m',
      env: `${env}_LINK_MAX_AGE`,
      paramsKey: `${params}.link-max-age`,
      description:
        'A link to a gateway older than this takes no new requests (the next one is dialled, with what it authenticates with read again) and closes when its requests are done.',
    },
    {
      flag: 'gateway-link-buffer-budget',
      type: 'int',
      default: 67108864,
      min: 1048576,
      env: `${env}_LINK_BUFFER_BUDGET`,
      paramsKey: `${params}.link-buffer-budget`,
      description:
        'Response bytes all gateway links of this replica may hold for readers that have not read them yet, together (each stream holds at most its credit window); a stream whose data would take them past it is reset alone. Metric pullplane_router_link_buffered_bytes.',
    },
    {
      flag: 'gateway-route-reconcile-interval',
      type: 'duration',
      default: '30s',
      min: '1s',
      env: `${env}_ROUTE_RECONCILE_INTERVAL`,
      paramsKey: `${params}.route-reconcile-interval`,
      description:
        "How often the routing table is compared with presence in NATS: a gateway's records that expired (NATS reports no event for that) stop costing requests within this long.",
    },
    {
      flag: 'gateway-plaintext',
      type: 'boolean',
      env: `${env}_PLAINTEXT`,
      paramsKey: `${params}.plaintext`,
      description: 'Reach gateways in plaintext (the mesh sidecar adds mTLS and identity).',
    },
  ]);
}
