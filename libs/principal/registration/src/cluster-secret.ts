import { createHash } from 'node:crypto';

export const SECRET_TYPE_LABEL = 'argocd.argoproj.io/secret-type';
export const AGENT_LABEL = 'pullplane.io/agent-name';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'pullplane';
export const FINGERPRINT_ANNOTATION = 'pullplane.io/credential-fingerprint';
/** When the credentials in the Secret stop working; the registrar rewrites it before then. */
export const EXPIRES_ANNOTATION = 'pullplane.io/credential-expires-at';

export type ClusterCredentials = ({ bearerToken: string } | { certData: string; keyData: string }) & {
  /** When the credentials expire (a token's `exp`); absent for credentials that do not. */
  expiresAt?: Date;
};

export interface ClusterSecretSpec {
  agent: string;
  namespace: string;
  /** Resource proxy URL addressing this agent, e.g. https://proxy:9090/clusters/<agent>. */
  server: string;
  credentials: ClusterCredentials;
  /** CA that verifies the resource proxy's server certificate. */
  caPem?: string;
  /** Changes whenever what the credentials are made from changes (keys, CA, server). */
  fingerprint: string;
}

export function secretName(agent: string): string {
  return `cluster-${agent}`;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** The Secret Argo CD reads as a cluster: `name`, `server`, `config` as Argo CD documents. */
export function clusterSecret(spec: ClusterSecretSpec) {
  const tls: Record<string, unknown> = { insecure: false };
  if (spec.caPem) tls.caData = b64(spec.caPem);
  const config =
    'bearerToken' in spec.credentials
      ? { bearerToken: spec.credentials.bearerToken, tlsClientConfig: tls }
      : {
          tlsClientConfig: {
            ...tls,
            certData: b64(spec.credentials.certData),
            keyData: b64(spec.credentials.keyData),
          },
        };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: secretName(spec.agent),
      namespace: spec.namespace,
      labels: { [SECRET_TYPE_LABEL]: 'cluster', [AGENT_LABEL]: spec.agent, [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: {
        [FINGERPRINT_ANNOTATION]: spec.fingerprint,
        ...(spec.credentials.expiresAt
          ? { [EXPIRES_ANNOTATION]: spec.credentials.expiresAt.toISOString() }
          : {}),
      },
    },
    data: { name: b64(spec.agent), server: b64(spec.server), config: b64(JSON.stringify(config)) },
  };
}

/** A stable digest of the inputs the credentials derive from. */
export function fingerprint(...parts: Array<string | undefined>): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p ?? '').update('\0');
  return h.digest('hex').slice(0, 32);
}

export function isOurs(secret: { metadata?: { labels?: Record<string, string> } } | undefined): boolean {
  return secret?.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;
}
