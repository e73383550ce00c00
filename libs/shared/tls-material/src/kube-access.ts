import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { clientNode } from './client-node.js';

export interface KubeAccessOptions {
  /** --kubeconfig. */
  kubeconfig?: string | undefined;
  /** --kubecontext. */
  kubecontext?: string | undefined;
}

/**
 * Whether a Kubernetes API is configured the way client-go finds one: --kubeconfig,
 * $KUBECONFIG, in-cluster (KUBERNETES_SERVICE_HOST), ~/.kube/config. client-node's
 * `loadFromDefault` would otherwise fall back to http://localhost:8080, which is never meant.
 */
export function kubeApiConfigured(
  opts: KubeAccessOptions,
  env: Readonly<Record<string, string | undefined>> = process.env,
): boolean {
  if (opts.kubeconfig) return true;
  if (env.KUBECONFIG) return true;
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return true;
  return existsSync(path.join(env.HOME ?? homedir(), '.kube', 'config'));
}

/** Loads the Kubernetes API configuration: --kubeconfig, else in-cluster, else $KUBECONFIG or ~/.kube/config. */
export function loadKubeAccess(opts: KubeAccessOptions): KubeConfig {
  const kc = new (clientNode().KubeConfig)();
  if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  if (opts.kubecontext) {
    if (!kc.getContexts().some((c) => c.name === opts.kubecontext)) {
      throw new Error(`kubeconfig has no context named ${JSON.stringify(opts.kubecontext)}`);
    }
    kc.setCurrentContext(opts.kubecontext);
  }
  return kc;
}
