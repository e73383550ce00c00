import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createNatsUserNkey } from '@pullplane/bus';
import { UsageError } from './errors.js';

/** The NATS roles of deploy/base/principal/nats/auth.conf, and where each one's seed goes. */
const ROLES = {
  gateway: { secret: 'argocd-agent-nats-gateway', holder: 'the stream gateways' },
  proxy: { secret: 'argocd-agent-nats-proxy', holder: 'the resource, redis and extension proxies' },
  admin: { secret: undefined, holder: 'the administrators (pullplane agent revoke, token revoke)' },
} as const;

/**
 * `nats nkeys`: one nkey per role. Writes every seed to `<dir>/<role>.nk` (mode 0600) and returns
 * the Secrets for the cluster: the NATS pods get only the public keys, each service only its
 * role's seed. The admin seed stays in `dir`, with whoever revokes.
 */
export function natsNkeys(o: {
  dir: string;
  namespace: string;
  force?: boolean;
}): Array<Record<string, unknown>> {
  const files = Object.keys(ROLES).map((role) => path.join(o.dir, `${role}.nk`));
  if (!o.force && files.some((f) => existsSync(f)))
    throw new UsageError(
      `${o.dir} already holds NATS nkeys; pass --force to replace them (then apply the Secrets and restart NATS)`,
    );
  mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const labels = { 'app.kubernetes.io/part-of': 'pullplane' };
  const publicKeys: Record<string, string> = {};
  const secrets: Array<Record<string, unknown>> = [];
  for (const [role, { secret }] of Object.entries(ROLES)) {
    const key = createNatsUserNkey();
    writeFileSync(path.join(o.dir, `${role}.nk`), `${key.seed}\n`, { mode: 0o600 });
    publicKeys[role] = key.publicKey;
    if (secret)
      secrets.push({
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: { name: secret, namespace: o.namespace, labels },
        stringData: { 'nkey.seed': key.seed },
      });
  }
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'argocd-agent-nats-users', namespace: o.namespace, labels },
      stringData: publicKeys,
    },
    ...secrets,
  ];
}

/** Who holds which seed, for the message after the manifests. */
export const natsNkeyHolders = (dir: string) =>
  Object.entries(ROLES)
    .map(([role, r]) => `${path.join(dir, `${role}.nk`)}: ${r.holder}`)
    .join('\n');
