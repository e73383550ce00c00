/**
 * An argocd-agent installation as a migrating operator has it: the `argocd-agent-params`
 * ConfigMaps with argocd-agent's keys and shipped defaults, Deployments whose env vars read
 * those keys (configMapKeyRef, optional), and the Secrets argocd-agent reads by name. Written
 * from argocd-agent's documented names (the side-by-side table in the project's reference
 * notes), for tests that feed them to our apps and to `pullplane migrate`.
 */
import { createPrivateKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import type { CertificateAndKey } from '@pullplane/pki';
import { issueCertificate } from '@pullplane/pki';
import { SignJWT } from 'jose';
import { stringify } from 'yaml';
import type { TestPki } from '../pki/test-pki.js';

export type Manifest = { apiVersion: string; kind: string; metadata: Record<string, unknown> } & Record<
  string,
  unknown
>;

/** argocd-agent's principal params ConfigMap with its shipped defaults. */
export const ARGOCD_AGENT_PRINCIPAL_PARAMS: Readonly<Record<string, string>> = {
  'principal.listen.host': '127.0.0.1',
  'principal.listen.port': '8443',
  'principal.log.level': 'info',
  'principal.log.format': 'text',
  'principal.metrics.port': '8000',
  'principal.namespace': 'argocd',
  'principal.allowed-namespaces': '',
  'principal.namespace-create.enable': 'false',
  'principal.namespace-create.pattern': '',
  'principal.namespace-create.labels': '',
  'principal.tls.secret-name': 'argocd-agent-principal-tls',
  'principal.tls.server.cert-path': '',
  'principal.tls.server.key-path': '',
  'principal.tls.server.allow-generate': 'false',
  'principal.tls.insecure-plaintext': 'false',
  'principal.tls.server.root-ca-secret-name': 'argocd-agent-ca',
  'principal.tls.server.root-ca-path': '',
  'principal.tls.client-cert.require': 'false',
  'principal.tls.client-cert.match-subject': 'false',
  'principal.tls.min-version': 'tls1.3',
  'principal.tls.max-version': '',
  'principal.tls.ciphersuites': '',
  'principal.resource-proxy.secret-name': 'argocd-agent-resource-proxy-tls',
  'principal.resource-proxy.tls.cert-path': '',
  'principal.resource-proxy.tls.key-path': '',
  'principal.resource-proxy.ca.secret-name': 'argocd-agent-ca',
  'principal.resource-proxy.ca.path': '',
  'principal.jwt.secret-name': 'argocd-agent-jwt',
  'principal.jwt.key-path': '',
  'principal.jwt.allow-generate': 'false',
  'principal.auth': 'mtls:CN=([^,]+)',
  'principal.websocket.enable': 'false',
  'principal.resource-proxy.enable': 'true',
  'principal.keep-alive.min-interval': '0',
  'principal.redis.server.address': 'argocd-redis:6379',
  'principal.redis.compression.type': 'gzip',
  'principal.pprof.port': '0',
  'principal.healthz.port': '8003',
  'principal.event-processors': '10',
  'principal.redis.tls.enabled': 'false',
  'principal.redis.proxy.server.tls.cert-path': '/app/config/redis-proxy-server-tls/tls.crt',
  'principal.redis.proxy.server.tls.key-path': '/app/config/redis-proxy-server-tls/tls.key',
  'principal.redis.proxy.server.tls.secret-name': 'argocd-redis-proxy-tls',
  'principal.redis.ca-path': '/app/config/redis-tls/ca.crt',
  'principal.redis.ca-secret-name': 'argocd-redis-tls',
  'principal.redis.tls.insecure': 'false',
  'principal.destination-based-mapping': 'false',
  'principal.label-selector': '',
};

/** The principal Deployment's env vars and the params keys they read. */
export const ARGOCD_AGENT_PRINCIPAL_ENV: ReadonlyArray<readonly [string, string]> = [
  ['ARGOCD_PRINCIPAL_LISTEN_HOST', 'principal.listen.host'],
  ['ARGOCD_PRINCIPAL_LISTEN_PORT', 'principal.listen.port'],
  ['ARGOCD_PRINCIPAL_LOG_LEVEL', 'principal.log.level'],
  ['ARGOCD_PRINCIPAL_LOG_FORMAT', 'principal.log.format'],
  ['ARGOCD_PRINCIPAL_METRICS_PORT', 'principal.metrics.port'],
  ['ARGOCD_PRINCIPAL_HEALTH_CHECK_PORT', 'principal.healthz.port'],
  ['ARGOCD_PRINCIPAL_NAMESPACE', 'principal.namespace'],
  ['ARGOCD_PRINCIPAL_ALLOWED_NAMESPACES', 'principal.allowed-namespaces'],
  ['ARGOCD_PRINCIPAL_NAMESPACE_CREATE_ENABLE', 'principal.namespace-create.enable'],
  ['ARGOCD_PRINCIPAL_NAMESPACE_CREATE_PATTERN', 'principal.namespace-create.pattern'],
  ['ARGOCD_PRINCIPAL_NAMESPACE_CREATE_LABELS', 'principal.namespace-create.labels'],
  ['ARGOCD_PRINCIPAL_TLS_SECRET_NAME', 'principal.tls.secret-name'],
  ['ARGOCD_PRINCIPAL_TLS_SERVER_CERT_PATH', 'principal.tls.server.cert-path'],
  ['ARGOCD_PRINCIPAL_TLS_SERVER_KEY_PATH', 'principal.tls.server.key-path'],
  ['ARGOCD_PRINCIPAL_TLS_SERVER_ALLOW_GENERATE', 'principal.tls.server.allow-generate'],
  ['ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT', 'principal.tls.insecure-plaintext'],
  ['ARGOCD_PRINCIPAL_TLS_SERVER_ROOT_CA_SECRET_NAME', 'principal.tls.server.root-ca-secret-name'],
  ['ARGOCD_PRINCIPAL_TLS_SERVER_ROOT_CA_PATH', 'principal.tls.server.root-ca-path'],
  ['ARGOCD_PRINCIPAL_TLS_CLIENT_CERT_REQUIRE', 'principal.tls.client-cert.require'],
  ['ARGOCD_PRINCIPAL_TLS_CLIENT_CERT_MATCH_SUBJECT', 'principal.tls.client-cert.match-subject'],
  ['ARGOCD_PRINCIPAL_TLS_MIN_VERSION', 'principal.tls.min-version'],
  ['ARGOCD_PRINCIPAL_TLS_MAX_VERSION', 'principal.tls.max-version'],
  ['ARGOCD_PRINCIPAL_TLS_CIPHERSUITES', 'principal.tls.ciphersuites'],
  ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_SECRET_NAME', 'principal.resource-proxy.secret-name'],
  ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_CERT_PATH', 'principal.resource-proxy.tls.cert-path'],
  ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_KEY_PATH', 'principal.resource-proxy.tls.key-path'],
  ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_CA_SECRET_NAME', 'principal.resource-proxy.ca.secret-name'],
  ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_CA_PATH', 'principal.resource-proxy.ca.path'],
  ['ARGOCD_PRINCIPAL_JWT_SECRET_NAME', 'principal.jwt.secret-name'],
  ['ARGOCD_PRINCIPAL_JWT_KEY_PATH', 'principal.jwt.key-path'],
  ['ARGOCD_PRINCIPAL_JWT_ALLOW_GENERATE', 'principal.jwt.allow-generate'],
  ['ARGOCD_PRINCIPAL_AUTH', 'principal.auth'],
  ['ARGOCD_PRINCIPAL_ENABLE_WEBSOCKET', 'principal.websocket.enable'],
  ['ARGOCD_PRINCIPAL_ENABLE_RESOURCE_PROXY', 'principal.resource-proxy.enable'],
  ['ARGOCD_PRINCIPAL_KEEP_ALIVE_MIN_INTERVAL', 'principal.keep-alive.min-interval'],
  ['ARGOCD_PRINCIPAL_REDIS_SERVER_ADDRESS', 'principal.redis.server.address'],
  ['ARGOCD_PRINCIPAL_REDIS_COMPRESSION_TYPE', 'principal.redis.compression.type'],
  ['ARGOCD_PRINCIPAL_PPROF_PORT', 'principal.pprof.port'],
  ['ARGOCD_PRINCIPAL_EVENT_PROCESSORS', 'principal.event-processors'],
  ['ARGOCD_PRINCIPAL_REDIS_TLS_ENABLED', 'principal.redis.tls.enabled'],
  ['ARGOCD_PRINCIPAL_REDIS_PROXY_SERVER_TLS_CERT_PATH', 'principal.redis.proxy.server.tls.cert-path'],
  ['ARGOCD_PRINCIPAL_REDIS_PROXY_SERVER_TLS_KEY_PATH', 'principal.redis.proxy.server.tls.key-path'],
  ['ARGOCD_PRINCIPAL_REDIS_PROXY_SERVER_TLS_SECRET_NAME', 'principal.redis.proxy.server.tls.secret-name'],
  ['ARGOCD_PRINCIPAL_REDIS_CA_PATH', 'principal.redis.ca-path'],
  ['ARGOCD_PRINCIPAL_REDIS_CA_SECRET_NAME', 'principal.redis.ca-secret-name'],
  ['ARGOCD_PRINCIPAL_REDIS_TLS_INSECURE', 'principal.redis.tls.insecure'],
  ['ARGOCD_PRINCIPAL_DESTINATION_BASED_MAPPING', 'principal.destination-based-mapping'],
  ['ARGOCD_PRINCIPAL_LABEL_SELECTOR', 'principal.label-selector'],
];

/** argocd-agent's agent params ConfigMap with its shipped defaults. */
export const ARGOCD_AGENT_AGENT_PARAMS: Readonly<Record<string, string>> = {
  'agent.server.address': 'argocd-agent-principal.example.com',
  'agent.server.port': '443',
  'agent.log.level': 'info',
  'agent.log.format': 'text',
  'agent.redis.address': 'argocd-redis:6379',
  'agent.redis.tls.enabled': 'false',
  'agent.redis.tls.ca-path': '/app/config/redis-tls/ca.crt',
  'agent.redis.tls.insecure': 'false',
  'agent.tls.client.insecure': 'false',
  'agent.tls.insecure-plaintext': 'false',
  'agent.namespace': 'argocd',
  'agent.mode': 'autonomous',
  'agent.creds': 'userpass:/app/config/creds/userpass.creds',
  'agent.tls.root-ca-secret-name': 'argocd-agent-ca',
  'agent.tls.root-ca-path': '',
  'agent.tls.secret-name': 'argocd-agent-client-tls',
  'agent.tls.client.cert-path': '',
  'agent.tls.client.key-path': '',
  'agent.tls.min-version': '',
  'agent.tls.max-version': '',
  'agent.tls.ciphersuites': '',
  'agent.websocket.enable': 'false',
  'agent.metrics.port': '8181',
  'agent.healthz.port': '8002',
  'agent.keep-alive.interval': '0',
  'agent.compression.enable': 'false',
  'agent.pprof.port': '0',
  'agent.resource-proxy.enable': 'true',
  'agent.informer-sync-timeout': '10s',
  'agent.destination-based-mapping': 'false',
  'agent.create-namespace': 'false',
  'agent.allowed-namespaces': '',
  'agent.label-selector': '',
};

/** The agent Deployment's env vars and the params keys they read. */
export const ARGOCD_AGENT_AGENT_ENV: ReadonlyArray<readonly [string, string]> = [
  ['ARGOCD_AGENT_REMOTE_SERVER', 'agent.server.address'],
  ['ARGOCD_AGENT_REMOTE_PORT', 'agent.server.port'],
  ['ARGOCD_AGENT_LOG_LEVEL', 'agent.log.level'],
  ['ARGOCD_AGENT_LOG_FORMAT', 'agent.log.format'],
  ['REDIS_ADDR', 'agent.redis.address'],
  ['ARGOCD_AGENT_REDIS_TLS_ENABLED', 'agent.redis.tls.enabled'],
  ['ARGOCD_AGENT_REDIS_TLS_CA_PATH', 'agent.redis.tls.ca-path'],
  ['ARGOCD_AGENT_REDIS_TLS_INSECURE', 'agent.redis.tls.insecure'],
  ['ARGOCD_AGENT_TLS_INSECURE', 'agent.tls.client.insecure'],
  ['ARGOCD_AGENT_INSECURE_PLAINTEXT', 'agent.tls.insecure-plaintext'],
  ['ARGOCD_AGENT_NAMESPACE', 'agent.namespace'],
  ['ARGOCD_AGENT_MODE', 'agent.mode'],
  ['ARGOCD_AGENT_CREDS', 'agent.creds'],
  ['ARGOCD_AGENT_TLS_ROOT_CA_SECRET_NAME', 'agent.tls.root-ca-secret-name'],
  ['ARGOCD_AGENT_TLS_ROOT_CA_PATH', 'agent.tls.root-ca-path'],
  ['ARGOCD_AGENT_TLS_SECRET_NAME', 'agent.tls.secret-name'],
  ['ARGOCD_AGENT_TLS_CLIENT_CERT_PATH', 'agent.tls.client.cert-path'],
  ['ARGOCD_AGENT_TLS_CLIENT_KEY_PATH', 'agent.tls.client.key-path'],
  ['ARGOCD_AGENT_TLS_MIN_VERSION', 'agent.tls.min-version'],
  ['ARGOCD_AGENT_TLS_MAX_VERSION', 'agent.tls.max-version'],
  ['ARGOCD_AGENT_TLS_CIPHERSUITES', 'agent.tls.ciphersuites'],
  ['ARGOCD_AGENT_ENABLE_WEBSOCKET', 'agent.websocket.enable'],
  ['ARGOCD_AGENT_METRICS_PORT', 'agent.metrics.port'],
  ['ARGOCD_AGENT_HEALTH_CHECK_PORT', 'agent.healthz.port'],
  ['ARGOCD_AGENT_KEEP_ALIVE_PING_INTERVAL', 'agent.keep-alive.interval'],
  ['ARGOCD_AGENT_ENABLE_COMPRESSION', 'agent.compression.enable'],
  ['ARGOCD_AGENT_PPROF_PORT', 'agent.pprof.port'],
  ['ARGOCD_AGENT_ENABLE_RESOURCE_PROXY', 'agent.resource-proxy.enable'],
  ['ARGOCD_AGENT_INFORMER_SYNC_TIMEOUT', 'agent.informer-sync-timeout'],
  ['ARGOCD_AGENT_DESTINATION_BASED_MAPPING', 'agent.destination-based-mapping'],
  ['ARGOCD_AGENT_CREATE_NAMESPACE', 'agent.create-namespace'],
  ['ARGOCD_AGENT_ALLOWED_NAMESPACES', 'agent.allowed-namespaces'],
  ['ARGOCD_AGENT_LABEL_SELECTOR', 'agent.label-selector'],
];

/** The env a Deployment's optional configMapKeyRefs produce: a key that exists sets its var, even to "". */
export function envFromParams(
  mapping: ReadonlyArray<readonly [string, string]>,
  data: Readonly<Record<string, string>>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, key] of mapping) if (key in data) env[name] = data[key]!;
  return env;
}

const configMap = (namespace: string, data: Readonly<Record<string, string>>): Manifest => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'argocd-agent-params',
    namespace,
    labels: { 'app.kubernetes.io/part-of': 'argocd-agent' },
  },
  data: { ...data },
});

const envRefs = (mapping: ReadonlyArray<readonly [string, string]>) =>
  mapping.map(([name, key]) => ({
    name,
    valueFrom: { configMapKeyRef: { name: 'argocd-agent-params', key, optional: true } },
  }));

function deployment(
  name: string,
  namespace: string,
  component: string,
  container: Record<string, unknown>,
  volumes: unknown[],
): Manifest {
  const labels = {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/part-of': 'argocd-agent',
    'app.kubernetes.io/component': component,
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/name': name } },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { serviceAccountName: name, containers: [container], volumes },
      },
    },
  };
}

const service = (
  name: string,
  namespace: string,
  selector: string,
  ports: Array<[string, number]>,
  type?: string,
): Manifest => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: {
    ...(type ? { type } : {}),
    selector: { 'app.kubernetes.io/name': selector },
    ports: ports.map(([n, port]) => ({ name: n, port, targetPort: port, protocol: 'TCP' })),
  },
});

/** The principal side: params, Deployment (env from params, REDIS_PASSWORD from argocd-redis), Services. */
export function argocdAgentPrincipalManifests(
  opts: { namespace?: string; params?: Readonly<Record<string, string>> } = {},
): Manifest[] {
  const ns = opts.namespace ?? 'argocd';
  const data = { ...ARGOCD_AGENT_PRINCIPAL_PARAMS, ...opts.params };
  const name = 'argocd-agent-principal';
  return [
    configMap(ns, data),
    deployment(
      name,
      ns,
      'principal',
      {
        name,
        image: 'quay.io/argoprojlabs/argocd-agent:v0.5.0',
        args: ['principal'],
        env: [
          ...envRefs(ARGOCD_AGENT_PRINCIPAL_ENV),
          { name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'argocd-redis', key: 'auth' } } },
        ],
        ports: [
          { containerPort: 8443, name: 'principal' },
          { containerPort: 6379, name: 'redis-proxy' },
          { containerPort: 8000, name: 'metrics' },
          { containerPort: 8003, name: 'healthz' },
        ],
        volumeMounts: [
          { name: 'jwt-secret', mountPath: '/app/config/jwt' },
          { name: 'redis-proxy-server-tls', mountPath: '/app/config/redis-proxy-server-tls', readOnly: true },
          { name: 'redis-tls-ca', mountPath: '/app/config/redis-tls', readOnly: true },
        ],
      },
      [
        { name: 'jwt-secret', secret: { secretName: 'argocd-agent-jwt', optional: true } },
        { name: 'redis-proxy-server-tls', secret: { secretName: 'argocd-redis-proxy-tls', optional: true } },
        { name: 'redis-tls-ca', secret: { secretName: 'argocd-redis-tls', optional: true } },
      ],
    ),
    service('argocd-agent-principal', ns, name, [['https', 443]], 'LoadBalancer'),
    service('argocd-agent-resource-proxy', ns, name, [['resource-proxy', 9090]]),
    service('argocd-agent-redis-proxy', ns, name, [['redis', 6379]]),
    service('argocd-agent-principal-metrics', ns, name, [['metrics', 8000]]),
    service('argocd-agent-principal-healthz', ns, name, [['healthz', 8003]]),
  ];
}

/** The agent side: params and a Deployment whose env reads them. */
export function argocdAgentAgentManifests(
  opts: { namespace?: string; params?: Readonly<Record<string, string>> } = {},
): Manifest[] {
  const ns = opts.namespace ?? 'argocd';
  const data = { ...ARGOCD_AGENT_AGENT_PARAMS, ...opts.params };
  const name = 'argocd-agent-agent';
  return [
    configMap(ns, data),
    deployment(
      name,
      ns,
      'agent',
      {
        name,
        image: 'quay.io/argoprojlabs/argocd-agent:v0.5.0',
        args: ['agent'],
        env: [
          ...envRefs(ARGOCD_AGENT_AGENT_ENV),
          {
            name: 'REDIS_PASSWORD',
            valueFrom: { secretKeyRef: { name: 'argocd-redis', key: 'auth', optional: true } },
          },
        ],
        ports: [
          { containerPort: 8181, name: 'metrics' },
          { containerPort: 8002, name: 'healthz' },
        ],
      },
      [],
    ),
  ];
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (
  name: string,
  namespace: string,
  data: Record<string, string>,
  extra: Record<string, unknown> = {},
): Manifest => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace, ...extra },
  type: 'Opaque',
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const tlsSecret = (name: string, namespace: string, pair: CertificateAndKey): Manifest => ({
  ...secret(name, namespace, { 'tls.crt': pair.certPem, 'tls.key': pair.keyPem }),
  type: 'kubernetes.io/tls',
});

/** The label argocd-agent puts on the cluster Secrets it writes. */
export const ARGOCD_AGENT_AGENT_NAME_LABEL = 'argocd-agent.argoproj-labs.io/agent-name';
export const ARGOCD_AGENT_SELF_REGISTERED_LABEL = 'argocd-agent.argoproj-labs.io/self-registered-cluster';

/** An RS512 resource-proxy token as argocd-agent's principal signs it (non-expiring). */
export async function argocdAgentResourceProxyToken(jwtKeyPem: string, agent: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS512', typ: 'JWT' })
    .setJti(randomUUID())
    .setIssuer('argocd-agent-server')
    .setSubject(agent)
    .setAudience(['argocd-agent-server-resource-proxy'])
    .setNotBefore(now)
    .setIssuedAt(now)
    .sign(createPrivateKey(jwtKeyPem));
}

export interface ArgocdAgentSecrets {
  /** Every Secret, principal namespace. */
  manifests: Manifest[];
  /** argocd-agent's RSA JWT signing key (PKCS#1 PEM, as its tooling writes it). */
  jwtKeyPem: string;
  /** Each agent's argocd-agent client certificate (CN = agent, no credential kind). */
  agentCerts: Record<string, CertificateAndKey>;
  /** The shared client certificate of self-registered clusters. */
  sharedClient: CertificateAndKey;
}

/**
 * The Secrets argocd-agent reads (CA with its key, principal and resource-proxy server
 * certificates, JWT key, redis proxy server certificate) and the cluster Secrets it writes:
 * `argocd-agentctl`'s (a per-agent certificate) for `ctl`, self-registration's (an RS512
 * bearer token plus a shared client certificate) for `selfRegistered`.
 */
export async function argocdAgentSecrets(
  pki: TestPki,
  opts: { namespace?: string; ctl?: string[]; selfRegistered?: string[]; resourceProxyAddress?: string } = {},
): Promise<ArgocdAgentSecrets> {
  const ns = opts.namespace ?? 'argocd';
  const address = opts.resourceProxyAddress ?? 'argocd-agent-resource-proxy:9090';
  const jwtKeyPem = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
  const principal = await pki.serverCert(['localhost', '127.0.0.1', 'argocd-agent-principal']);
  const resourceProxy = await pki.serverCert(['localhost', '127.0.0.1', 'argocd-agent-resource-proxy']);
  const redisProxy = await pki.serverCert(['localhost', '127.0.0.1', 'argocd-agent-redis-proxy']);
  const sharedClient = await issueCertificate(pki.ca, {
    commonName: 'argocd-agent-shared-client',
    usage: 'client',
  });
  const manifests: Manifest[] = [
    // argocd-agentctl keeps the CA's key next to its certificate.
    { ...tlsSecret('argocd-agent-ca', ns, pki.ca) },
    tlsSecret('argocd-agent-principal-tls', ns, principal),
    tlsSecret('argocd-agent-resource-proxy-tls', ns, resourceProxy),
    tlsSecret('argocd-redis-proxy-tls', ns, redisProxy),
    secret('argocd-agent-jwt', ns, { 'jwt.key': jwtKeyPem }),
  ];
  const agentCerts: Record<string, CertificateAndKey> = {};
  const cluster = (agent: string, config: Record<string, unknown>, labels: Record<string, string>) =>
    secret(
      `cluster-${agent}`,
      ns,
      { name: agent, server: `https://${address}?agentName=${agent}`, config: JSON.stringify(config) },
      {
        labels: {
          'argocd.argoproj.io/secret-type': 'cluster',
          [ARGOCD_AGENT_AGENT_NAME_LABEL]: agent,
          ...labels,
        },
      },
    );
  for (const agent of opts.ctl ?? []) {
    const cert = await pki.clientCert(agent);
    agentCerts[agent] = cert;
    manifests.push(
      cluster(
        agent,
        {
          tlsClientConfig: {
            insecure: false,
            certData: b64(cert.certPem),
            keyData: b64(cert.keyPem),
            caData: b64(pki.ca.certPem),
          },
        },
        {},
      ),
    );
  }
  for (const agent of opts.selfRegistered ?? []) {
    manifests.push(
      cluster(
        agent,
        {
          bearerToken: await argocdAgentResourceProxyToken(jwtKeyPem, agent),
          tlsClientConfig: {
            insecure: false,
            certData: b64(sharedClient.certPem),
            keyData: b64(sharedClient.keyPem),
            caData: b64(pki.ca.certPem),
          },
        },
        { [ARGOCD_AGENT_SELF_REGISTERED_LABEL]: 'true' },
      ),
    );
  }
  return { manifests, jwtKeyPem, agentCerts, sharedClient };
}

/** Objects as one multi-document YAML file, the way `kubectl get -o yaml` users keep them. */
export function manifestsToYaml(objects: readonly Manifest[]): string {
  return objects.map((o) => stringify(o)).join('---\n');
}
