import type { AgentServiceConfig } from '../agent-options.js';

export const CLUSTER_AGENT_GROUP = 'pullplane.io';
export const CLUSTER_AGENT_VERSION = 'v1alpha1';
export const CLUSTER_AGENT_PLURAL = 'clusteragents';

/** What a ClusterAgent holds (deploy/crds/clusteragents.pullplane.io.yaml). */
export interface ClusterAgentSpec {
  server: { address: string; port?: number };
  agentName?: string;
  /** The agent token from the central side: by Secret reference (better) or inline. */
  token?: { secretRef?: { name: string; key?: string }; value?: string };
  tls?: {
    /** Secret with the gateway's CA (ca.crt or tls.crt). */
    rootCaSecretName?: string;
    /** kubernetes.io/tls Secret with a client certificate: mtls instead of a token. */
    clientCertSecretName?: string;
    /** Do not verify the gateway's certificate (tests only). */
    insecureSkipVerify?: boolean;
  };
  /** Behind a mesh: the sidecar encrypts and identifies; the agent dials plaintext. */
  mesh?: { enabled?: boolean };
}

export interface ClusterAgentObject {
  metadata: { name: string; namespace?: string; generation?: number; resourceVersion?: string };
  spec?: ClusterAgentSpec;
}

/** Where the agent's token comes from, when the ClusterAgent gives one. */
export type TokenSource = { secret: { name: string; key: string } } | { inline: string } | undefined;

/**
 * The agent's configuration with a ClusterAgent applied: the fields its spec sets win over
 * flags, env and params, which fill in everything else (heartbeats, Redis, resource proxy...).
 * Returns the problems instead when the spec cannot be run.
 */
export function applyClusterAgent(
  c: AgentServiceConfig,
  obj: ClusterAgentObject,
): { config: AgentServiceConfig; token: TokenSource } | { problems: string[] } {
  const spec = obj.spec;
  const problems: string[] = [];
  if (!spec?.server?.address) problems.push('spec.server.address is required');
  const port = spec?.server?.port;
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))
    problems.push(`spec.server.port ${JSON.stringify(port)} is not a port`);
  const t = spec?.token;
  if (t?.secretRef && t.value !== undefined) problems.push('spec.token: give secretRef or value, not both');
  if (t?.value !== undefined && t.value.trim() === '') problems.push('spec.token.value is empty');
  const mesh = spec?.mesh?.enabled === true;
  const mtls = spec?.tls?.clientCertSecretName !== undefined;
  if (!mesh && !mtls && !t?.secretRef && t?.value === undefined)
    problems.push(
      'spec.token (secretRef or value) is required unless spec.tls.clientCertSecretName or spec.mesh.enabled is set',
    );
  if (problems.length > 0 || !spec) return { problems };
  const token: TokenSource = mesh
    ? undefined
    : t?.secretRef
      ? { secret: { name: t.secretRef.name, key: t.secretRef.key ?? 'token' } }
      : t?.value !== undefined
        ? { inline: t.value.trim() }
        : undefined;
  const config: AgentServiceConfig = {
    ...c,
    serverAddress: spec.server.address,
    ...(port !== undefined ? { serverPort: port } : {}),
    ...(spec.agentName ? { agentName: spec.agentName } : {}),
    // The token is read from the ClusterAgent's source at every connect, never from a file.
    creds: mesh ? 'header:' : token ? `token:clusteragent/${obj.metadata.name}` : 'mtls:',
    ...(mesh ? { insecurePlaintext: true } : {}),
    ...(spec.tls?.rootCaSecretName
      ? { rootCaSecretName: spec.tls.rootCaSecretName, rootCaPath: undefined }
      : {}),
    ...(mtls
      ? { tlsSecretName: spec.tls!.clientCertSecretName!, tlsClientCert: undefined, tlsClientKey: undefined }
      : {}),
    ...(spec.tls?.insecureSkipVerify ? { insecureTls: true } : {}),
  };
  return { config, token };
}
