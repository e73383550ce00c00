import { defineOptions } from '@pullplane/config';

/**
 * Where a principal proxy reads its watched Secrets (`SecretStore`): the namespace and the
 * Kubernetes API (`loadKubeAccess`). Shared names, as in argocd-agent's principal.
 */
export const principalSecretAccessOptions = defineOptions([
  {
    flag: 'namespace',
    type: 'string',
    default: 'argocd',
    env: 'ARGOCD_PRINCIPAL_NAMESPACE',
    paramsKey: 'principal.namespace',
    description: 'Namespace of the Secrets named by the *-secret-name flags.',
  },
  {
    flag: 'kubeconfig',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_KUBECONFIG',
    paramsKey: 'principal.kubeconfig',
    description: 'Kubeconfig for reading Secrets (default: in-cluster, then $KUBECONFIG).',
  },
  {
    flag: 'kubecontext',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_KUBECONTEXT',
    paramsKey: 'principal.kubecontext',
    description: 'Context of --kubeconfig to use (default: its current context).',
  },
]);
