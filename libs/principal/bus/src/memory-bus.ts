import { EventEmitter } from 'node:events';
import { presenceKey, revocationKey } from './codec.js';
import type { Bus, BusStatus, ControlEvent, PresenceEvent, PresenceRecord, Revocation } from './types.js';

/**
 * The embedded single-process bus: same contract as the NATS bus, nothing leaves the
 * process. Listeners are called asynchronously, as they would be over the network.
 */
export function createMemoryBus(): Bus {
  const records = new Map<string, PresenceRecord>();
  // Revisions as a stream numbers its messages; a removal is a revision too (a tombstone), so a
  // replaced session cannot write its record back after it.
  let revision = 0;
  const removed = new Set<string>();
  const write = (record: PresenceRecord) => {
    const stored = { ...record, revision: ++revision };
    records.set(record.agent, stored);
    removed.delete(record.agent);
    emit('presence', { type: 'put', record: { ...stored } });
    return stored.revision;
  };
  const revoked = new Map<string, Revocation>();
  const revocationListeners = new Set<(r: Revocation) => void>();
  const events = new EventEmitter<{ presence: [PresenceEvent]; control: [ControlEvent] }>();
  events.setMaxListeners(0);
  const emit = <K extends 'presence' | 'control'>(
    name: K,
    ev: K extends 'presence' ? PresenceEvent : ControlEvent,
  ) => queueMicrotask(() => (events.emit as (n: string, e: unknown) => boolean)(name, ev));
  return {
    kind: 'memory',
    status: 'connected' as BusStatus,
    presence: {
      async put(record) {
        // Same refusal as the NATS bus, so the embedded mode cannot hold a record a cluster could not.
        presenceKey(record.agent);
        return write(record);
      },
      async refresh(record, expected) {
        presenceKey(record.agent);
        const current = records.get(record.agent);
        const ours = current
          ? current.revision === expected || current.sessionId === record.sessionId
          : !removed.has(record.agent);
        if (ours) return { held: true, revision: write(record) };
        return { held: false, current: current && { ...current } };
      },
      async remove(agent, sessionId) {
        if (records.get(agent)?.sessionId !== sessionId) return;
        records.delete(agent);
        removed.add(agent);
        revision++;
        emit('presence', { type: 'delete', agent });
      },
      async get(agent) {
        const r = records.get(agent);
        return r && { ...r };
      },
      async list() {
        return [...records.values()].map((r) => ({ ...r }));
      },
      async watch(listener) {
        for (const record of records.values()) listener({ type: 'put', record: { ...record } });
        events.on('presence', listener);
        return () => events.off('presence', listener);
      },
    },
    control: {
      async publish(event) {
        emit('control', event);
      },
      subscribe(listener) {
        events.on('control', listener);
        return () => events.off('control', listener);
      },
    },
    revocations: {
      async add(r) {
        revoked.set(revocationKey(r), r);
        for (const l of revocationListeners) queueMicrotask(() => l(r));
      },
      async list() {
        return [...revoked.values()];
      },
      async watch(listener) {
        for (const r of revoked.values()) listener(r);
        revocationListeners.add(listener);
        return () => revocationListeners.delete(listener);
      },
    },
    onStatus() {
      return () => undefined;
    },
    async close() {
      events.removeAllListeners();
    },
  };
}
