/**
 * argocd-agent's flags, env vars and params keys that no pullplane app reads, each with why:
 * a feature pullplane does not have, a setting pullplane has no use for (it always behaves that
 * way), or one it does not support yet. Startup reports name them as such instead of "unknown",
 * so a migrating operator knows what was dropped and whether it matters.
 *
 * Names pullplane does read (as its own or as aliases) are not listed here: the option tables
 * are the source of truth for those.
 */

import type { ConfigFamily } from './name-registry.js';

export type ArgocdAgentGapKind =
  /** A feature pullplane does not have: a set value changes nothing, which may matter. */
  | 'missing'
  /** pullplane always behaves this way, or has no use for the setting. */
  | 'implied'
  /** Planned, not supported yet. */
  | 'not-yet';

export interface ArgocdAgentName {
  readonly family: ConfigFamily;
  readonly flag?: string;
  readonly env?: string;
  readonly key?: string;
  /** Values that leave the feature off (argocd-agent's shipped defaults): nothing is lost. */
  readonly inert?: readonly string[];
}

export interface ArgocdAgentGap {
  /** "argocd-agent's <what>": the feature the names belong to. */
  readonly what: string;
  readonly kind: ArgocdAgentGapKind;
  /** What pullplane does instead, or what to use. */
  readonly instead: string;
  readonly names: readonly ArgocdAgentName[];
}

const OFF = ['', 'false', '0'];
const p = (
  flag: string,
  env: string | undefined,
  key?: string,
  inert?: readonly string[],
): ArgocdAgentName => ({
  family: 'principal',
  flag,
  ...(env ? { env } : {}),
  ...(key ? { key } : {}),
  ...(inert ? { inert } : {}),
});
const a = (
  flag: string,
  env: string | undefined,
  key?: string,
  inert?: readonly string[],
): ArgocdAgentName => ({
  family: 'agent',
  flag,
  ...(env ? { env } : {}),
  ...(key ? { key } : {}),
  ...(inert ? { inert } : {}),
});

export const ARGOCD_AGENT_GAPS: readonly ArgocdAgentGap[] = [
  {
    what: 'application synchronisation (Applications, AppProjects and their namespaces copied between principal and agents)',
    kind: 'missing',
    instead:
      "pullplane's agent serves the resource proxy and the redis proxy; Argo CD's controller runs where the Applications live",
    names: [
      p('allowed-namespaces', 'ARGOCD_PRINCIPAL_ALLOWED_NAMESPACES', 'principal.allowed-namespaces', OFF),
      p(
        'destination-based-mapping',
        'ARGOCD_PRINCIPAL_DESTINATION_BASED_MAPPING',
        'principal.destination-based-mapping',
        OFF,
      ),
      p('label-selector', 'ARGOCD_PRINCIPAL_LABEL_SELECTOR', 'principal.label-selector', OFF),
      a('agent-mode', 'ARGOCD_AGENT_MODE', 'agent.mode'),
      a('allowed-namespaces', 'ARGOCD_AGENT_ALLOWED_NAMESPACES', 'agent.allowed-namespaces', OFF),
      a(
        'destination-based-mapping',
        'ARGOCD_AGENT_DESTINATION_BASED_MAPPING',
        'agent.destination-based-mapping',
        OFF,
      ),
      a('label-selector', 'ARGOCD_AGENT_LABEL_SELECTOR', 'agent.label-selector', OFF),
      a('create-namespace', 'ARGOCD_AGENT_CREATE_NAMESPACE', 'agent.create-namespace', OFF),
      a('ignore-unmanaged-apps', 'ARGOCD_AGENT_IGNORE_UNMANAGED_APPS', undefined, OFF),
      a('source-uid-mismatch-policy', 'ARGOCD_AGENT_SOURCE_UID_MISMATCH_POLICY', undefined, ['']),
      a('on-application-recreate', 'ARGOCD_AGENT_ON_APPLICATION_RECREATE', undefined, ['']),
      a('adoption-policy', 'ARGOCD_AGENT_ADOPTION_POLICY', undefined, ['']),
      a('cache-refresh-interval', 'ARGOCD_AGENT_CACHE_REFRESH_INTERVAL', undefined, ['']),
      a('informer-sync-timeout', 'ARGOCD_AGENT_INFORMER_SYNC_TIMEOUT', 'agent.informer-sync-timeout'),
      a('buffer-informer-event-interval', 'ARGOCD_AGENT_BUFFER_INFORMER_EVENT_INTERVAL', undefined, ['']),
    ],
  },
  {
    what: 'namespace creation on the principal',
    kind: 'missing',
    instead: 'create namespaces with your usual tooling',
    names: [
      p(
        'namespace-create-enable',
        'ARGOCD_PRINCIPAL_NAMESPACE_CREATE_ENABLE',
        'principal.namespace-create.enable',
        OFF,
      ),
      p(
        'namespace-create-pattern',
        'ARGOCD_PRINCIPAL_NAMESPACE_CREATE_PATTERN',
        'principal.namespace-create.pattern',
        OFF,
      ),
      p(
        'namespace-create-labels',
        'ARGOCD_PRINCIPAL_NAMESPACE_CREATE_LABELS',
        'principal.namespace-create.labels',
        OFF,
      ),
    ],
  },
  {
    what: 'active/passive HA peering',
    kind: 'missing',
    instead: 'pullplane is active-active: run several replicas of each service behind their Services',
    names: [
      p('ha-enabled', 'ARGOCD_PRINCIPAL_HA_ENABLED', undefined, OFF),
      p('ha-preferred-role', 'ARGOCD_PRINCIPAL_HA_PREFERRED_ROLE', undefined, ['']),
      p('ha-peer-address', 'ARGOCD_PRINCIPAL_HA_PEER_ADDRESS', undefined, ['']),
      p('ha-failover-timeout', 'ARGOCD_PRINCIPAL_HA_FAILOVER_TIMEOUT', undefined, ['', '0']),
      p('ha-admin-port', 'ARGOCD_PRINCIPAL_HA_ADMIN_PORT', undefined, OFF),
      p('ha-allowed-replication-clients', 'ARGOCD_PRINCIPAL_HA_ALLOWED_REPLICATION_CLIENTS', undefined, ['']),
      p(
        'ha-replication-initial-ack-timeout',
        'ARGOCD_PRINCIPAL_HA_REPLICATION_INITIAL_ACK_TIMEOUT',
        undefined,
        ['', '0'],
      ),
    ],
  },
  {
    what: 'event processors',
    kind: 'implied',
    instead:
      'pullplane processes no application events: requests travel as multiplexed streams, each served as it arrives',
    names: [p('event-processors', 'ARGOCD_PRINCIPAL_EVENT_PROCESSORS', 'principal.event-processors')],
  },
  {
    what: 'websocket transport',
    kind: 'missing',
    instead: 'the tunnel is gRPC over HTTP/2; load balancers and meshes in between must pass HTTP/2',
    names: [
      p('enable-websocket', 'ARGOCD_PRINCIPAL_ENABLE_WEBSOCKET', 'principal.websocket.enable', OFF),
      a('enable-websocket', 'ARGOCD_AGENT_ENABLE_WEBSOCKET', 'agent.websocket.enable', OFF),
    ],
  },
  {
    what: 'Redis payload compression',
    kind: 'implied',
    instead: 'Redis replies stream through the tunnel as they come, with no event encoding to compress',
    names: [
      p(
        'redis-compression-type',
        'ARGOCD_PRINCIPAL_REDIS_COMPRESSION_TYPE',
        'principal.redis.compression.type',
      ),
    ],
  },
  {
    what: 'pprof profiling endpoint',
    kind: 'missing',
    instead: "profile with Node's own tools (node --cpu-prof, --heap-prof, --inspect)",
    names: [
      p('pprof-port', 'ARGOCD_PRINCIPAL_PPROF_PORT', 'principal.pprof.port', OFF),
      a('pprof-port', 'ARGOCD_AGENT_PPROF_PORT', 'agent.pprof.port', OFF),
    ],
  },
  {
    what: 'generated certificates and signing keys',
    kind: 'missing',
    instead: 'create them with `pullplane ca init` and `pullplane cert create`, or cert-manager',
    names: [
      p(
        'insecure-tls-generate',
        'ARGOCD_PRINCIPAL_TLS_SERVER_ALLOW_GENERATE',
        'principal.tls.server.allow-generate',
        OFF,
      ),
      p('insecure-jwt-generate', 'ARGOCD_PRINCIPAL_JWT_ALLOW_GENERATE', 'principal.jwt.allow-generate', OFF),
    ],
  },
  {
    what: 'text log format',
    kind: 'implied',
    instead: 'logs are JSON lines (pino); pipe them through pino-pretty to read them as text',
    names: [
      p('log-format', 'ARGOCD_PRINCIPAL_LOG_FORMAT', 'principal.log.format', ['', 'json']),
      a('log-format', 'ARGOCD_AGENT_LOG_FORMAT', 'agent.log.format', ['', 'json']),
      p('full-detail', 'ARGOCD_PRINCIPAL_FULL_DETAIL', undefined, OFF),
      a('full-detail', 'ARGOCD_AGENT_FULL_DETAIL', undefined, OFF),
    ],
  },
  {
    what: 'gRPC message size limit',
    kind: 'implied',
    instead: 'tunnel frames are bounded by --max-chunk-size on the gateway',
    names: [
      p('grpc-max-message-size', 'ARGOCD_PRINCIPAL_GRPC_MAX_MESSAGE_SIZE', undefined),
      a('grpc-max-message-size', 'ARGOCD_AGENT_GRPC_MAX_MESSAGE_SIZE', undefined),
    ],
  },
  {
    what: 'client certificate switches',
    kind: 'implied',
    instead:
      'with --auth=mtls (or mtls:subject:/mtls:uri:) the gateway always requires a client certificate, and the certificate must carry its credential kind for the name it authenticates as',
    names: [
      p(
        'require-client-certs',
        'ARGOCD_PRINCIPAL_TLS_CLIENT_CERT_REQUIRE',
        'principal.tls.client-cert.require',
      ),
      p(
        'client-cert-subject-match',
        'ARGOCD_PRINCIPAL_TLS_CLIENT_CERT_MATCH_SUBJECT',
        'principal.tls.client-cert.match-subject',
      ),
    ],
  },
  {
    what: 'shared client certificate in self-registered cluster Secrets',
    kind: 'implied',
    instead:
      'cluster Secrets written by pullplane carry a caller token scoped to their agent and no client certificate',
    names: [
      p('self-registration-client-cert-secret', 'ARGOCD_PRINCIPAL_SELF_REGISTRATION_CLIENT_CERT_SECRET'),
    ],
  },
  {
    what: 'Redis ACL user',
    kind: 'missing',
    instead: "the agent authenticates to Argo CD's Redis as the default user, with REDIS_PASSWORD",
    names: [a('redis-username', 'REDIS_USERNAME', undefined, [''])],
  },
  {
    what: 'keepalive ping enforcement',
    kind: 'implied',
    instead:
      "the gateway does not police agents' HTTP/2 keepalive pings; application heartbeats detect dead tunnels",
    names: [
      p(
        'keepalive-min-interval',
        'ARGOCD_PRINCIPAL_KEEP_ALIVE_MIN_INTERVAL',
        'principal.keep-alive.min-interval',
      ),
    ],
  },
  {
    what: 'gRPC compression of the event stream',
    kind: 'missing',
    instead: 'tunnel frames are not compressed; bodies stream as they come',
    names: [a('enable-compression', 'ARGOCD_AGENT_ENABLE_COMPRESSION', 'agent.compression.enable', OFF)],
  },
];

export interface ArgocdAgentGapMatch {
  readonly gap: ArgocdAgentGap;
  readonly name: ArgocdAgentName;
}

type NameKind = 'flag' | 'env' | 'key';
const index = new Map<string, ArgocdAgentGapMatch>();
for (const gap of ARGOCD_AGENT_GAPS) {
  for (const name of gap.names) {
    for (const kind of ['flag', 'env', 'key'] as const) {
      const value = name[kind];
      if (value !== undefined) index.set(`${name.family}:${kind}:${value}`, { gap, name });
    }
  }
}

/** The argocd-agent feature a name belongs to, when pullplane does not read it. */
export function findArgocdAgentGap(
  family: ConfigFamily,
  kind: NameKind,
  name: string,
): ArgocdAgentGapMatch | undefined {
  return index.get(`${family}:${kind}:${name}`);
}

/** Every argocd-agent name of a family listed here (for "did you mean" hints). */
export function argocdAgentGapNames(family: ConfigFamily, kind: NameKind): string[] {
  return ARGOCD_AGENT_GAPS.flatMap((g) => g.names)
    .filter((n) => n.family === family && n[kind] !== undefined)
    .map((n) => n[kind] as string);
}

/** "argocd-agent's <what>, which pullplane does not have; <instead>" and the like. */
export function describeArgocdAgentGap(gap: ArgocdAgentGap): string {
  switch (gap.kind) {
    case 'missing':
      return `argocd-agent's ${gap.what}, which pullplane does not have: ${gap.instead}`;
    case 'implied':
      return `argocd-agent's ${gap.what}: ${gap.instead}`;
    case 'not-yet':
      return `argocd-agent's ${gap.what}: ${gap.instead}`;
  }
}
