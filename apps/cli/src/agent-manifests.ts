import {
  AGENT_CLUSTER_ROLE_RULES,
  AGENT_ENHANCED_CLUSTER_ROLE_RULES,
  AGENT_ROLE_RULES,
} from './gen/agent-rbac.js';

/**
 * What a workload cluster needs to run one agent from a ClusterAgent: ServiceAccount, RBAC,
 * NetworkPolicies, the credential and CA Secrets, the ClusterAgent, a params ConfigMap for
 * the rest of the agent's settings, and the Deployment. Every name carries the agent's name
 * under the `pullplane-agent-` prefix, so several agents, and deploy/base/agent (whose objects
 * are `argocd-agent-*`), can share a namespace without one overwriting another.
 */
export interface AgentManifestOptions {
  agent: string;
  namespace: string;
  serverAddress: string;
  serverPort: number;
  image: string;
  /** minimal: Argo CD's resources in its namespace; enhanced: the live resources of applications. */
  rbac: 'minimal' | 'enhanced';
  credentials:
    | { kind: 'mtls'; certPem: string; keyPem: string; caPem: string }
    | { kind: 'token'; token: string; caPem?: string };
}

const CONFIG_DIR = '/app/config';
const REDIS_PODS = ['argocd-redis', 'argocd-redis-ha-haproxy'];

/** The prefix of every object `agent create` emits for `agent`. */
export const agentObjectName = (agent: string) => `pullplane-agent-${agent}`;

export function agentManifests(o: AgentManifestOptions): Array<Record<string, unknown>> {
  const name = agentObjectName(o.agent);
  const labels = {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/component': 'agent',
    'app.kubernetes.io/part-of': 'pullplane',
    'pullplane.io/agent-name': o.agent,
  };
  const selector = { 'app.kubernetes.io/name': name };
  const meta = (n: string, namespaced = true) => ({
    name: n,
    ...(namespaced ? { namespace: o.namespace } : {}),
    labels,
  });
  const mtls = o.credentials.kind === 'mtls';
  const credentialSecret = mtls ? `${name}-tls` : `${name}-token`;
  const caSecret = `${name}-ca`;
  const caPem = o.credentials.caPem;
  const subject = [{ kind: 'ServiceAccount', name, namespace: o.namespace }];
  const bind = (
    kind: 'RoleBinding' | 'ClusterRoleBinding',
    role: string,
    roleKind: 'Role' | 'ClusterRole',
  ) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind,
    metadata: meta(role, kind === 'RoleBinding'),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name: role },
    subjects: subject,
  });
  // The bundle's rules (deploy/base/agent, deploy/components/agent-enhanced-rbac), generated.
  const clusterRules = structuredClone(
    o.rbac === 'enhanced' ? AGENT_ENHANCED_CLUSTER_ROLE_RULES : AGENT_CLUSTER_ROLE_RULES,
  );
  const params: Record<string, string> = {
    // Server, name and credentials come from the ClusterAgent (--cluster-agent), which wins.
    'agent.cluster-agent': o.agent,
    'agent.heartbeat.interval': '30s',
    'agent.resource-proxy.enable': 'true',
    'agent.resource-proxy.filter': o.rbac === 'enhanced' ? 'none' : 'managed',
    'agent.metrics.port': '8181',
    'agent.healthz.port': '8002',
    'agent.log.level': 'info',
  };
  const clusterAgent = {
    apiVersion: 'pullplane.io/v1alpha1',
    kind: 'ClusterAgent',
    metadata: meta(o.agent),
    spec: {
      server: { address: o.serverAddress, port: o.serverPort },
      agentName: o.agent,
      ...(mtls ? {} : { token: { secretRef: { name: credentialSecret, key: 'token' } } }),
      tls: {
        ...(caPem ? { rootCaSecretName: caSecret } : {}),
        ...(mtls ? { clientCertSecretName: credentialSecret } : {}),
      },
    },
  };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(name) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(name),
      rules: [
        ...structuredClone(AGENT_ROLE_RULES),
        // Its ClusterAgent: read and followed; the status written back.
        {
          apiGroups: ['pullplane.io'],
          resources: ['clusteragents'],
          resourceNames: [o.agent],
          verbs: ['get', 'list', 'watch'],
        },
        {
          apiGroups: ['pullplane.io'],
          resources: ['clusteragents/status'],
          resourceNames: [o.agent],
          verbs: ['get', 'patch', 'update'],
        },
      ],
    },
    bind('RoleBinding', name, 'Role'),
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta(name, false),
      rules: clusterRules,
    },
    bind('ClusterRoleBinding', name, 'ClusterRole'),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta(name),
      spec: {
        podSelector: { matchLabels: selector },
        policyTypes: ['Ingress', 'Egress'],
        // Prometheus scrapes the metrics port; nothing else dials the agent.
        ingress: [{ ports: [{ protocol: 'TCP', port: 8181 }] }],
        egress: [
          {
            ports: [
              { protocol: 'UDP', port: 53 },
              { protocol: 'TCP', port: 53 },
            ],
          },
          // The local API server (443 or 6443) and the principal's gateway.
          {
            ports: [
              { protocol: 'TCP', port: 443 },
              { protocol: 'TCP', port: 6443 },
              ...([443, 6443].includes(o.serverPort) ? [] : [{ protocol: 'TCP', port: o.serverPort }]),
            ],
          },
          {
            to: [
              {
                podSelector: {
                  matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: REDIS_PODS }],
                },
              },
            ],
            ports: [{ protocol: 'TCP', port: 6379 }],
          },
        ],
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: meta(`${name}-to-argocd-redis`),
      spec: {
        podSelector: {
          matchExpressions: [{ key: 'app.kubernetes.io/name', operator: 'In', values: REDIS_PODS }],
        },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: selector } }], ports: [{ protocol: 'TCP', port: 6379 }] },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(credentialSecret),
      type: mtls ? 'kubernetes.io/tls' : 'Opaque',
      stringData:
        o.credentials.kind === 'mtls'
          ? { 'tls.crt': o.credentials.certPem, 'tls.key': o.credentials.keyPem }
          : { token: o.credentials.token },
    },
    ...(caPem
      ? [
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: meta(caSecret),
            type: 'Opaque',
            stringData: { 'ca.crt': caPem },
          },
        ]
      : []),
    clusterAgent,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(`${name}-params`), data: params },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(name),
      spec: {
        replicas: 1,
        selector: { matchLabels: selector },
        template: {
          metadata: {
            labels,
            annotations: {
              'prometheus.io/scrape': 'true',
              'prometheus.io/port': '8181',
              'prometheus.io/path': '/metrics',
            },
          },
          spec: {
            serviceAccountName: name,
            automountServiceAccountToken: true,
            // No fixed IDs: OpenShift's restricted-v2 assigns them; elsewhere the image's user.
            securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'agent',
                image: o.image,
                imagePullPolicy: 'IfNotPresent',
                args: [`--params-file=${CONFIG_DIR}/params`],
                env: [
                  {
                    name: 'ARGOCD_AGENT_NAMESPACE',
                    valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } },
                  },
                  // Argo CD's Redis password, as Argo CD's own components read it; optional: a
                  // cluster without Argo CD (shape 2) has no Redis and no Secret.
                  {
                    name: 'REDIS_PASSWORD',
                    valueFrom: { secretKeyRef: { name: 'argocd-redis', key: 'auth', optional: true } },
                  },
                ],
                ports: [
                  { name: 'metrics', containerPort: 8181 },
                  { name: 'healthz', containerPort: 8002 },
                ],
                readinessProbe: {
                  httpGet: { path: '/readyz', port: 'healthz' },
                  periodSeconds: 10,
                  failureThreshold: 2,
                },
                livenessProbe: {
                  httpGet: { path: '/healthz', port: 'healthz' },
                  initialDelaySeconds: 10,
                  periodSeconds: 20,
                  failureThreshold: 3,
                },
                resources: {
                  requests: { cpu: '50m', memory: '256Mi' },
                  limits: { cpu: '1', memory: '512Mi' },
                },
                securityContext: {
                  runAsNonRoot: true,
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { name: 'params', mountPath: `${CONFIG_DIR}/params`, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'params', configMap: { name: `${name}-params` } },
              { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
            ],
          },
        },
      },
    },
  ];
}
