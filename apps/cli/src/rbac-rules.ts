/** One rule of a Role or ClusterRole, as rbac.authorization.k8s.io/v1 writes it. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}
