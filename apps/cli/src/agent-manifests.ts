/** What the workload cluster needs to run one agent: params ConfigMap, credentials Secret, Deployment. */
export interface AgentManifestOptions {
  agent: string;
  namespace: string;
  serverAddress: string;
  serverPort: number;
  image: string;
  credentials:
    | { kind: 'mtls'; certPem: string; keyPem: string; caPem: string }
    | { kind: 'token'; token: string; caPem?: string };
}

const CONFIG_DIR = '/app/config';

export function agentManifests(o: AgentManifestOptions): Array<Record<string, unknown>> {
  const labels = {
    'app.kubernetes.io/name': 'argocd-agent-agent',
    'app.kubernetes.io/part-of': 'pullplane',
    'pullplane.io/agent-name': o.agent,
  };
  const meta = (name: string) => ({ name, namespace: o.namespace, labels });
  const mtls = o.credentials.kind === 'mtls';
  const secretName = mtls ? 'argocd-agent-client-tls' : 'argocd-agent-token';
  const params: Record<string, string> = {
    'agent.name': o.agent,
    'agent.server.address': o.serverAddress,
    'agent.server.port': String(o.serverPort),
    'agent.namespace': o.namespace,
    'agent.creds': mtls ? 'mtls:' : `token:${CONFIG_DIR}/credentials/token`,
    'agent.heartbeat.interval': '30s',
    'agent.log.level': 'info',
  };
  if (mtls) {
    params['agent.tls.client.cert-path'] = `${CONFIG_DIR}/credentials/tls.crt`;
    params['agent.tls.client.key-path'] = `${CONFIG_DIR}/credentials/tls.key`;
  }
  if (o.credentials.caPem) params['agent.tls.root-ca-path'] = `${CONFIG_DIR}/credentials/ca.crt`;
  const secretData: Record<string, string> =
    o.credentials.kind === 'mtls'
      ? { 'tls.crt': o.credentials.certPem, 'tls.key': o.credentials.keyPem, 'ca.crt': o.credentials.caPem }
      : { token: o.credentials.token, ...(o.credentials.caPem ? { 'ca.crt': o.credentials.caPem } : {}) };
  return [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('argocd-agent-params'), data: params },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: meta(secretName),
      type: mtls ? 'kubernetes.io/tls' : 'Opaque',
      stringData: secretData,
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta('argocd-agent-agent'),
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'app.kubernetes.io/name': 'argocd-agent-agent' } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'argocd-agent-agent',
            // The image runs as uid 1000; fsGroup makes the mounted credentials readable to it.
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 1000,
              fsGroup: 1000,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: 'agent',
                image: o.image,
                args: [`--params-file=${CONFIG_DIR}/params`],
                ports: [
                  { name: 'metrics', containerPort: 8181 },
                  { name: 'healthz', containerPort: 8002 },
                ],
                readinessProbe: { httpGet: { path: '/readyz', port: 'healthz' }, periodSeconds: 10 },
                livenessProbe: { httpGet: { path: '/healthz', port: 'healthz' }, periodSeconds: 20 },
                resources: { requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '512Mi' } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { name: 'params', mountPath: `${CONFIG_DIR}/params`, readOnly: true },
                  { name: 'credentials', mountPath: `${CONFIG_DIR}/credentials`, readOnly: true },
                ],
              },
            ],
            volumes: [
              { name: 'params', configMap: { name: 'argocd-agent-params' } },
              { name: 'credentials', secret: { secretName, defaultMode: 0o440 } },
            ],
          },
        },
      },
    },
  ];
}
