import { StatusError } from './status.js';

/**
 * A Kubernetes RBAC PolicyRule, plus `namespaces`: where the rule applies when it came through a
 * RoleBinding (absent = a ClusterRoleBinding, everywhere). Resource rules and non-resource rules are
 * told apart as in Kubernetes: a rule with `nonResourceURLs` covers only paths outside /api and /apis.
 */
export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[] | undefined;
  /** `pods`, `pods/log`, `*`, `*\/scale` (the forms RBAC understands; `pods/*` matches nothing). */
  resources?: string[] | undefined;
  resourceNames?: string[] | undefined;
  namespaces?: string[] | undefined;
  nonResourceURLs?: string[] | undefined;
}

/** What the authorizer is asked, as the API server's request-info resolver fills it in. */
export interface ResourceAttributes {
  verb: string;
  apiGroup: string;
  resource: string;
  subresource?: string | undefined;
  /** Empty or undefined at the cluster scope. */
  namespace?: string | undefined;
  name?: string | undefined;
}

/** The user a bearer token stands for unless told otherwise: the agent's service account in deploy/. */
export const AGENT_SERVICE_ACCOUNT_USER = 'system:serviceaccount:argocd:argocd-agent-agent';

/**
 * What every identity without rules of its own may do: every ordinary verb on everything, so tests
 * that do not care about RBAC keep working. Not `impersonate` (nothing in deploy/ grants it), nor
 * `escalate`/`bind`.
 */
export const FULL_ACCESS_RULES: readonly PolicyRule[] = Object.freeze([
  {
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'],
    apiGroups: ['*'],
    resources: ['*'],
  },
  { verbs: ['*'], nonResourceURLs: ['*'] },
]);

function matchesVerb(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.includes('*') || rule.verbs.includes(verb);
}

function matchesResource(rule: PolicyRule, resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return (rule.resources ?? []).some(
    (r) => r === '*' || r === combined || (subresource !== undefined && r === `*/${subresource}`),
  );
}

/** The RBAC authorizer's rule match (rbac/v1 helpers), namespace-scoped rules included. */
export function ruleAllows(rule: PolicyRule, attrs: ResourceAttributes): boolean {
  if (!matchesVerb(rule, attrs.verb)) return false;
  const groups = rule.apiGroups ?? [];
  if (!groups.includes('*') && !groups.includes(attrs.apiGroup)) return false;
  if (!matchesResource(rule, attrs.resource, attrs.subresource)) return false;
  const names = rule.resourceNames ?? [];
  if (names.length > 0 && !names.includes(attrs.name ?? '')) return false;
  if (rule.namespaces !== undefined && !rule.namespaces.includes(attrs.namespace ?? '')) return false;
  return true;
}

/** Non-resource URL match: exact, `*`, or a prefix ending in `*`. */
export function nonResourceRuleAllows(rule: PolicyRule, verb: string, path: string): boolean {
  if (!matchesVerb(rule, verb)) return false;
  return (rule.nonResourceURLs ?? []).some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

/** The rules in force for each user, with FULL_ACCESS_RULES for users nobody configured. */
export class RbacRules {
  private readonly byUser = new Map<string, readonly PolicyRule[]>();

  constructor(initial: Record<string, readonly PolicyRule[]> = {}) {
    for (const [user, rules] of Object.entries(initial)) this.byUser.set(user, rules);
  }

  /** Replaces a user's rules; undefined gives the user FULL_ACCESS_RULES again. */
  set(user: string, rules: readonly PolicyRule[] | undefined): void {
    if (rules === undefined) this.byUser.delete(user);
    else this.byUser.set(user, rules);
  }

  rulesFor(user: string): readonly PolicyRule[] {
    return this.byUser.get(user) ?? FULL_ACCESS_RULES;
  }

  allows(user: string, attrs: ResourceAttributes): boolean {
    return this.rulesFor(user).some((rule) => ruleAllows(rule, attrs));
  }

  allowsNonResource(user: string, verb: string, path: string): boolean {
    return this.rulesFor(user).some((rule) => nonResourceRuleAllows(rule, verb, path));
  }

  /** Throws the API server's 403 when `user` may not do `attrs`. */
  authorize(user: string, attrs: ResourceAttributes): void {
    if (!this.allows(user, attrs)) throw forbidden(user, attrs);
  }
}

/**
 * `pods "web" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "demo"`,
 * worded as apiserver's forbidden() with the RBAC authorizer's reason.
 */
export function forbidden(user: string, attrs: ResourceAttributes): StatusError {
  const qualified = attrs.apiGroup ? `${attrs.resource}.${attrs.apiGroup}` : attrs.resource;
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? `in the namespace "${attrs.namespace}"` : 'at the cluster scope';
  const reason = `User "${user}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}" ${scope}`;
  const subject = attrs.name ? `${qualified} "${attrs.name}"` : qualified;
  return new StatusError(403, 'Forbidden', `${subject} is forbidden: ${reason}`, {
    name: attrs.name || undefined,
    group: attrs.apiGroup || undefined,
    kind: attrs.resource,
  });
}

/** The request-info verb of an HTTP method on a collection or an item. */
export function verbOf(method: string, item: boolean, watch: boolean): string {
  if (watch) return 'watch';
  switch (method) {
    case 'GET':
    case 'HEAD':
      return item ? 'get' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return item ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}
