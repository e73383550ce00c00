import { describe, expect, it } from 'vitest';
import { decodeControl, decodePresence, decodeRevocation, encodeJson, encodePresence } from '../src/codec.js';
import { BusError } from '../src/errors.js';
import type { PresenceRecord } from '../src/types.js';

// What other replicas write to NATS is read as untrusted input: a record that does not have
// the shape is refused with a BusError naming what is wrong, and fields nobody defined are
// never carried on into routing tables.
const presence: PresenceRecord = {
  agent: 'agent-a',
  gatewayId: 'gw-1',
  internalAddress: '10.0.0.1:8444',
  sessionId: 's-1',
  connectedAt: '2026-11-27T05:00:00Z',
  lastHeartbeat: '2026-11-27T05:00:10Z',
  agentVersion: '0.1.0',
  protocolVersion: 2,
  credential: 'agent',
  remoteAddress: '10.1.2.3:51000',
};

const bytes = (v: unknown) => encodeJson(v);
const refusal = (f: () => unknown): BusError => {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(BusError);
    return err as BusError;
  }
  throw new Error('accepted');
};

describe('bus record codec', () => {
  it('reads back a presence record as written, without its revision', () => {
    expect(decodePresence(encodePresence({ ...presence, revision: 7 }))).toEqual(presence);
    const { credential: _c, remoteAddress: _r, ...older } = presence;
    expect(decodePresence(bytes(older))).toEqual(older);
  });

  it('drops fields a presence record does not define', () => {
    const read = decodePresence(bytes({ ...presence, internalAddressOverride: 'evil:1', __proto__x: 1 }));
    expect(read).toEqual(presence);
    expect(Object.keys(read)).not.toContain('internalAddressOverride');
  });

  it.each([
    ['a missing agent', { ...presence, agent: undefined }, /agent must be a string/],
    ['an empty agent', { ...presence, agent: '' }, /agent must be at least 1/],
    ['a numeric gateway id', { ...presence, gatewayId: 5 }, /gatewayId must be a string/],
    [
      'a fractional protocol version',
      { ...presence, protocolVersion: 1.5 },
      /protocolVersion must be a whole number/,
    ],
    [
      'an unknown credential kind',
      { ...presence, credential: 'admin' },
      /credential must be one of agent, unmarked/,
    ],
    ['a null credential', { ...presence, credential: null }, /credential must be one of/],
    [
      'an overlong remote address',
      { ...presence, remoteAddress: 'x'.repeat(129) },
      /remoteAddress must be at most 128/,
    ],
  ])('refuses a presence record with %s', (_what, record, message) => {
    expect(refusal(() => decodePresence(bytes(record))).message).toMatch(message);
  });

  it.each([
    ['not JSON', Buffer.from('{"agent":')],
    ['an array', bytes([presence])],
    ['a string', bytes('agent-a')],
    ['null', bytes(null)],
  ])('refuses a presence record that is %s', (_what, raw) => {
    expect(refusal(() => decodePresence(raw)).message).toMatch(/invalid presence record: not a JSON object/);
  });

  it('reads every control event type, and refuses an unknown one or a missing field', () => {
    for (const event of [
      { type: 'agent-revoked', agent: 'a', reason: 'r' },
      { type: 'agent-kicked', agent: 'a', reason: 'r' },
      { type: 'token-denied', jti: 'j' },
      { type: 'config-reload', service: 'gateway' },
      { type: 'config-reload' },
    ])
      expect(decodeControl(bytes(event))).toEqual(event);
    expect(refusal(() => decodeControl(bytes({ type: 'agent-promoted', agent: 'a' }))).message).toMatch(
      /type must be one of agent-revoked, agent-kicked, token-denied, config-reload/,
    );
    expect(refusal(() => decodeControl(bytes({ type: 'agent-revoked', agent: 'a' }))).message).toMatch(
      /reason must be a string/,
    );
    // A name inherited by every object is not a type.
    expect(() => decodeControl(bytes({ type: 'toString' }))).toThrow(BusError);
  });

  it('reads both revocation kinds with only their own fields, and refuses an empty subject', () => {
    const agent = { kind: 'agent', agent: 'a', reason: 'r', at: 't' };
    expect(decodeRevocation(bytes({ ...agent, jti: 'smuggled' }))).toEqual(agent);
    const token = { kind: 'token', jti: 'j', reason: 'r', at: 't' };
    expect(decodeRevocation(bytes(token))).toEqual(token);
    expect(refusal(() => decodeRevocation(bytes({ ...token, jti: '' }))).message).toMatch(
      /jti must be at least 1/,
    );
    expect(refusal(() => decodeRevocation(bytes({ kind: 'cluster' }))).message).toMatch(
      /kind must be one of agent, token/,
    );
  });

  it('refuses every byte string that is not a record with a BusError, never another error', () => {
    // Random bytes and truncations of a good record: the decoders' only failure is a BusError.
    const good = Buffer.from(encodePresence(presence));
    let seed = 42;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    const inputs: Buffer[] = [];
    for (let n = 0; n < good.length; n++) inputs.push(good.subarray(0, n));
    for (let i = 0; i < 300; i++) {
      const b = Buffer.from(good);
      for (let k = 0; k < 3; k++) b[rand() % b.length] = rand() % 256;
      inputs.push(b);
    }
    for (const input of inputs)
      for (const decode of [decodePresence, decodeControl, decodeRevocation]) {
        try {
          decode(input);
        } catch (err) {
          expect(err).toBeInstanceOf(BusError);
        }
      }
  });
});
