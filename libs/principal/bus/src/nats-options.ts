import { defineOptions } from '@pullplane/config';
import type { Logger } from 'pino';
import { type BusBucket, connectNatsBus } from './nats-bus.js';
import { type NatsSecurityFlags, natsConnectionSecurity, natsSecurityWarnings } from './nats-credentials.js';
import type { Bus } from './types.js';

/**
 * The NATS flags every principal service shares (same env vars and params keys). Each service
 * has its own identity: the params keys name file paths, and each Deployment mounts its own
 * role's Secret there.
 */
export const natsOptions = defineOptions([
  {
    flag: 'nats-url',
    type: 'string',
    default: 'nats://127.0.0.1:4222',
    env: 'ARGOCD_PRINCIPAL_NATS_URL',
    paramsKey: 'principal.nats.url',
    description:
      'NATS server(s), comma-separated, holding shared agent presence and revocations; tls://… demands TLS.',
  },
  {
    flag: 'presence-replicas',
    type: 'int',
    default: 1,
    min: 1,
    max: 5,
    env: 'ARGOCD_PRINCIPAL_NATS_PRESENCE_REPLICAS',
    paramsKey: 'principal.nats.presence-replicas',
    description:
      'JetStream replicas of the buckets this service creates (the gateway the presence bucket; 3 on a three-node NATS cluster).',
  },
  {
    flag: 'nats-nkey-seed-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_NATS_NKEY_SEED_PATH',
    paramsKey: 'principal.nats.nkey-seed-path',
    description:
      "File with this service's NATS nkey user seed (SU…): signs the server's challenge, no secret crosses the network. Re-read on reconnect.",
  },
  {
    flag: 'nats-creds-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_NATS_CREDS_PATH',
    paramsKey: 'principal.nats.creds-path',
    description:
      'NATS credentials file (user JWT and nkey seed, as nsc writes it) for a NATS in operator mode.',
  },
  {
    flag: 'nats-user',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_NATS_USER',
    paramsKey: 'principal.nats.user',
    description: 'NATS user name, with --nats-password-path (or --nats-password).',
  },
  {
    flag: 'nats-password-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_NATS_PASSWORD_PATH',
    paramsKey: 'principal.nats.password-path',
    description: 'File holding the NATS password of --nats-user (a trailing newline is dropped).',
  },
  {
    flag: 'nats-password',
    type: 'string',
    secret: true,
    env: 'ARGOCD_PRINCIPAL_NATS_PASSWORD',
    description:
      'NATS password of --nats-user (prefer --nats-password-path; never a params key, so it stays out of ConfigMaps).',
  },
  {
    flag: 'nats-tls-ca-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_NATS_TLS_CA_PATH',
    paramsKey: 'principal.nats.tls.ca-path',
    description: "CA (PEM) that verifies the NATS server's certificate; setting it demands TLS.",
  },
  {
    flag: 'nats-tls-cert-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_NATS_TLS_CERT_PATH',
    paramsKey: 'principal.nats.tls.cert-path',
    description: 'Client certificate (PEM) for NATS (verify / verify_and_map); demands TLS.',
  },
  {
    flag: 'nats-tls-key-path',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_NATS_TLS_KEY_PATH',
    paramsKey: 'principal.nats.tls.key-path',
    description: 'Private key (PEM) of --nats-tls-cert-path.',
  },
  {
    flag: 'nats-insecure',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_NATS_INSECURE',
    paramsKey: 'principal.nats.insecure',
    description:
      'Connect to NATS without credentials (development only): without it a service with no NATS identity refuses to start.',
  },
]);

export type NatsFlags = NatsSecurityFlags & { presenceReplicas: number };

/**
 * Connects with the shared NATS flags, as one role: `creates` names the buckets the role owns
 * (the gateway: presence; proxies: none). Logs the security warnings first; problems that must
 * not stop the bus are logged as they happen.
 */
export function connectBusFromFlags(
  c: NatsFlags,
  opts: { name: string; logger: Logger; creates: readonly BusBucket[]; presenceTtlMs?: number },
): Promise<Bus> {
  const onWarning = (msg: string, err?: unknown) =>
    opts.logger.warn({ err: err === undefined ? undefined : String(err) }, msg);
  for (const w of natsSecurityWarnings(c)) opts.logger.warn({ natsInsecure: c.natsInsecure }, w);
  const security = natsConnectionSecurity(c, onWarning);
  opts.logger.info({ natsUrl: c.natsUrl, natsIdentity: security.identity }, 'connecting to NATS');
  return connectNatsBus({
    servers: c.natsUrl.split(',').map((s) => s.trim()),
    name: opts.name,
    replicas: c.presenceReplicas,
    security,
    creates: opts.creates,
    ...(opts.presenceTtlMs ? { presenceTtlMs: opts.presenceTtlMs } : {}),
    onWarning,
  });
}
