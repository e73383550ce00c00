import { BusError, BusErrorCode } from './errors.js';
import { integer, oneOf, optional, readShape, readTagged, type Shape, text } from './record-shape.js';
import type { ControlEvent, PresenceRecord, Revocation } from './types.js';

const PRESENCE: Shape = {
  agent: text({ min: 1 }),
  gatewayId: text({ min: 1 }),
  internalAddress: text(),
  sessionId: text({ min: 1 }),
  connectedAt: text(),
  lastHeartbeat: text(),
  agentVersion: text(),
  protocolVersion: integer,
  credential: optional(oneOf('agent', 'unmarked')),
  remoteAddress: optional(text({ max: 128 })),
};

const CONTROL: Readonly<Record<ControlEvent['type'], Shape>> = {
  'agent-revoked': { agent: text(), reason: text() },
  'agent-kicked': { agent: text(), reason: text() },
  'token-denied': { jti: text() },
  'config-reload': { service: optional(text()) },
};

const REVOCATION: Readonly<Record<Revocation['kind'], Shape>> = {
  agent: { agent: text({ min: 1 }), reason: text(), at: text() },
  token: { jti: text({ min: 1 }), reason: text(), at: text() },
};

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** A presence record as stored: its revision is the store's, never part of the value. */
export function encodePresence(record: PresenceRecord): Uint8Array {
  const { revision: _revision, ...stored } = record;
  return encodeJson(stored);
}

// Records written by another replica are validated: a corrupt entry must not poison routing.
export function decodePresence(bytes: Uint8Array): PresenceRecord {
  const read = readShape(safeJson(bytes), PRESENCE);
  if (!read.ok)
    throw new BusError(BusErrorCode.INVALID_RECORD, `invalid presence record: ${read.problems.join('; ')}`);
  return read.value as unknown as PresenceRecord;
}

export function decodeControl(bytes: Uint8Array): ControlEvent {
  const read = readTagged(safeJson(bytes), 'type', CONTROL);
  if (!read.ok)
    throw new BusError(BusErrorCode.INVALID_RECORD, `invalid control event: ${read.problems.join('; ')}`);
  return read.value as unknown as ControlEvent;
}

export function decodeRevocation(bytes: Uint8Array): Revocation {
  const read = readTagged(safeJson(bytes), 'kind', REVOCATION);
  if (!read.ok)
    throw new BusError(BusErrorCode.INVALID_RECORD, `invalid revocation: ${read.problems.join('; ')}`);
  return read.value as unknown as Revocation;
}

/** One key per revoked subject, so revoking twice is idempotent. */
export function revocationKey(r: Revocation): string {
  return r.kind === 'agent'
    ? `agent.${presenceKey(r.agent)}`
    : `token.${r.jti.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

function safeJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    return undefined;
  }
}

/** KV keys allow [-/_=.a-zA-Z0-9]; agent names are DNS labels, so they map one to one. */
export function presenceKey(agent: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(agent)) {
    throw new BusError(BusErrorCode.INVALID_RECORD, `agent name ${JSON.stringify(agent)} is not a DNS label`);
  }
  return agent;
}
