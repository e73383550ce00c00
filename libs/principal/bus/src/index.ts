export { decodePresence, decodeRevocation, presenceKey, revocationKey } from './codec.js';
export { onConfigReload } from './config-reloads.js';
export { BusError, BusErrorCode, BusErrors } from './errors.js';
export { createMemoryBus } from './memory-bus.js';
export {
  type BusBucket,
  connectNatsBus,
  DEFAULT_CONTROL_SUBJECT,
  DEFAULT_PRESENCE_BUCKET,
  type NatsBusOptions,
  revocationBucketName,
} from './nats-bus.js';
export {
  createNatsUserNkey,
  type NatsConnectionSecurity,
  type NatsSecurityFlags,
  natsConnectionSecurity,
  natsSecurityProblems,
  natsSecurityWarnings,
  natsTlsRequired,
} from './nats-credentials.js';
export { connectBusFromFlags, type NatsFlags, natsOptions } from './nats-options.js';
export { followRevocations, type RevocationHandlers } from './revocation-feed.js';
export type {
  Bus,
  BusStatus,
  ControlBus,
  ControlEvent,
  PresenceEvent,
  PresenceRecord,
  PresenceRefresh,
  PresenceStore,
  Revocation,
  RevocationStore,
} from './types.js';
