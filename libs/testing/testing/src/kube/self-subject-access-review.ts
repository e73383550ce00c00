import type { ServerContext } from './server-context.js';
import { errors } from './status.js';
import { isPlainObject } from './types.js';

function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** `kubectl auth can-i`: answers a SelfSubjectAccessReview from the requesting user's RBAC rules. */
export function reviewAccess(ctx: ServerContext, user: string, review: unknown): Record<string, unknown> {
  if (!isPlainObject(review)) throw errors.badRequest('the request body must be a JSON object');
  const spec = isPlainObject(review.spec) ? review.spec : {};
  let allowed: boolean;
  if (isPlainObject(spec.resourceAttributes)) {
    const a = spec.resourceAttributes;
    allowed = ctx.rbac.allows(user, {
      verb: text(a.verb),
      apiGroup: text(a.group),
      resource: text(a.resource),
      subresource: text(a.subresource) || undefined,
      namespace: text(a.namespace) || undefined,
      name: text(a.name) || undefined,
    });
  } else if (isPlainObject(spec.nonResourceAttributes)) {
    const a = spec.nonResourceAttributes;
    allowed = ctx.rbac.allowsNonResource(user, text(a.verb), text(a.path));
  } else {
    throw errors.invalid('SelfSubjectAccessReview', 'authorization.k8s.io', '', [
      {
        type: 'FieldValueRequired',
        message:
          'Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified',
        field: 'spec.resourceAttributes',
      },
    ]);
  }
  return { ...review, spec, status: allowed ? { allowed: true } : { allowed: false } };
}
