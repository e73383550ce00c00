import { z } from 'zod';
import { BusError, BusErrorCode } from './errors.js';
import type { ControlEvent, PresenceRecord, Revocation } from './types.js';

const presenceSchema = z.object({
  agent: z.string().min(1),
  gatewayId: z.string().min(1),
  internalAddress: z.string(),
  sessionId: z.string().min(1),
  connectedAt: z.string(),
  lastHeartbeat: z.string(),
  agentVersion: z.string(),
  protocolVersion: z.number().int(),
  credential: z.enum(['agent', 'unmarked']).optional(),
  remoteAddress: z.string().max(128).optional(),
});

const controlSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('agent-revoked'), agent: z.string(), reason: z.string() }),
  z.object({ type: z.literal('agent-kicked'), agent: z.string(), reason: z.string() }),
  z.object({ type: z.literal('token-denied'), jti: z.string() }),
  z.object({ type: z.literal('config-reload'), service: z.string().optional() }),
]);

const revocationSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('agent'), agent: z.string().min(1), reason: z.string(), at: z.string() }),
  z.object({ kind: z.literal('token'), jti: z.string().min(1), reason: z.string(), at: z.string() }),
]);

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
  const parsed = presenceSchema.safeParse(safeJson(bytes));
  if (!parsed.success)
    throw new BusError(BusErrorCode.INVALID_RECORD, `invalid presence record: ${parsed.error.message}`);
  return parsed.data;
}

export function decodeControl(bytes: Uint8Array): ControlEvent {
  const parsed = controlSchema.safeParse(safeJson(bytes));
  if (!parsed.success)
    throw new BusError(BusErrorCode.INVALID_RECORD, `invalid control event: ${parsed.error.message}`);
  return parsed.data as ControlEvent;
}

export function decodeRevocation(bytes: Uint8Array): Revocation {
  const parsed = revocationSchema.safeParse(safeJson(bytes));
  if (!parsed.success)
    throw new BusError(BusErrorCode.INVALID_RECORD, `invalid revocation: ${parsed.error.message}`);
  return parsed.data as Revocation;
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
