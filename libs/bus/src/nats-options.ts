import { defineOptions } from '@pullplane/config';
import type { Logger } from 'pino';
import { connectNatsBus } from './nats-bus.js';
import type { Bus } from './types.js';

/** The NATS flags every principal service shares (same env vars and params keys). */
export const natsOptions = defineOptions([
  {
    flag: 'nats-url',
    type: 'string',
    default: 'nats://127.0.0.1:4222',
    env: 'ARGOCD_PRINCIPAL_NATS_URL',
    paramsKey: 'principal.nats.url',
    description: 'NATS server(s), comma-separated, holding shared agent presence.',
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
      'JetStream replicas of the presence and revocation buckets, whichever service creates them first (3 on a three-node NATS cluster).',
  },
]);

/** Connects with the shared NATS flags; problems that must not stop the bus are logged. */
export function connectBusFromFlags(
  c: { natsUrl: string; presenceReplicas: number },
  opts: { name: string; logger: Logger; presenceTtlMs?: number },
): Promise<Bus> {
  return connectNatsBus({
    servers: c.natsUrl.split(',').map((s) => s.trim()),
    name: opts.name,
    replicas: c.presenceReplicas,
    ...(opts.presenceTtlMs ? { presenceTtlMs: opts.presenceTtlMs } : {}),
    onWarning: (msg, err) => opts.logger.warn({ err: err === undefined ? undefined : String(err) }, msg),
  });
}
