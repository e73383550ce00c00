import type { V1Secret } from '@kubernetes/client-node';
import {
  AGENT_LABEL,
  type ClusterSecretSpec,
  clusterSecret,
  EXPIRES_ANNOTATION,
  FINGERPRINT_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SECRET_TYPE_LABEL,
} from './cluster-secret.js';

/** The label argocd-agent puts on the cluster Secrets it writes (argocd-agentctl and self-registration). */
export const ARGOCD_AGENT_AGENT_NAME_LABEL = 'argocd-agent.argoproj-labs.io/agent-name';
/** Marks a Secret pullplane took over from argocd-agent; its name and `server` are kept on every rewrite. */
export const ADOPTED_ANNOTATION = 'pullplane.io/adopted-from';

/** Whether the Secret is a cluster Secret argocd-agent wrote for this agent. */
export function isArgocdAgentClusterSecret(secret: V1Secret | undefined, agent: string): boolean {
  const labels = secret?.metadata?.labels ?? {};
  return labels[ARGOCD_AGENT_AGENT_NAME_LABEL] === agent && labels[SECRET_TYPE_LABEL] === 'cluster';
}

export function isAdopted(secret: V1Secret | undefined): boolean {
  return secret?.metadata?.annotations?.[ADOPTED_ANNOTATION] !== undefined;
}

/**
 * argocd-agent's cluster Secret rewritten with pullplane's credentials: the name, the labels
 * and every data field Argo CD reads stay (above all `server`, which Applications name as their
 * destination, `https://<proxy>?agentName=<agent>`); `config` becomes a caller token scoped to
 * the agent. The client certificate argocd-agent put there is dropped: it carries no
 * credential kind and could not be told apart from the agent's own certificate.
 */
export function adoptedClusterSecret(existing: V1Secret, spec: ClusterSecretSpec): V1Secret {
  const ours = clusterSecret(spec);
  const meta = existing.metadata ?? {};
  const config = JSON.parse(Buffer.from(ours.data.config, 'base64').toString()) as {
    bearerToken?: string;
    tlsClientConfig: Record<string, unknown>;
  };
  if (config.tlsClientConfig.caData === undefined) {
    // Without a CA of our own, keep the one argocd-agent wrote (it verified the same proxy address).
    const previous = readConfig(existing)?.tlsClientConfig?.caData;
    if (typeof previous === 'string') config.tlsClientConfig.caData = previous;
  }
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: existing.type ?? 'Opaque',
    metadata: {
      name: meta.name!,
      namespace: meta.namespace ?? spec.namespace,
      labels: { ...meta.labels, [AGENT_LABEL]: spec.agent, [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: {
        ...withoutOurs(meta.annotations),
        ...ours.metadata.annotations,
        [ADOPTED_ANNOTATION]: meta.annotations?.[ADOPTED_ANNOTATION] ?? 'argocd-agent',
      },
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
    },
    data: {
      ...existing.data,
      config: Buffer.from(JSON.stringify(config)).toString('base64'),
    },
  };
}

function readConfig(secret: V1Secret): { tlsClientConfig?: Record<string, unknown> } | undefined {
  const raw = secret.data?.config;
  if (!raw) return undefined;
  try {
    return JSON.parse(Buffer.from(raw, 'base64').toString()) as { tlsClientConfig?: Record<string, unknown> };
  } catch {
    return undefined;
  }
}

function withoutOurs(annotations: Record<string, string> | undefined): Record<string, string> {
  const out = { ...annotations };
  delete out[FINGERPRINT_ANNOTATION];
  delete out[EXPIRES_ANNOTATION];
  return out;
}
