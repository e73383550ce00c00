export { decodePresence, decodeRevocation, presenceKey, revocationKey } from './codec.js';
export { BusError, BusErrorCode, BusErrors } from './errors.js';
export { createMemoryBus } from './memory-bus.js';
export {
  connectNatsBus,
  DEFAULT_CONTROL_SUBJECT,
  DEFAULT_PRESENCE_BUCKET,
  type NatsBusOptions,
} from './nats-bus.js';
export { connectBusFromFlags, natsOptions } from './nats-options.js';
export { followRevocations, type RevocationHandlers } from './revocation-feed.js';
export type {
  Bus,
  BusStatus,
  ControlBus,
  ControlEvent,
  PresenceEvent,
  PresenceRecord,
  PresenceStore,
  Revocation,
  RevocationStore,
} from './types.js';
