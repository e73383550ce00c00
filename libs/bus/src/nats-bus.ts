import { setTimeout as sleep } from 'node:timers/promises';
import { type KV, Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  decodeControl,
  decodePresence,
  decodeRevocation,
  encodeJson,
  presenceKey,
  revocationKey,
} from './codec.js';
import { BusError, BusErrorCode } from './errors.js';
import type { Bus, BusStatus, ControlEvent, PresenceEvent, PresenceRecord, Revocation } from './types.js';

export interface NatsBusOptions {
  servers: string | string[];
  /** Connection name shown by the NATS server (monitoring, logs). */
  name: string;
  bucket?: string;
  /** Bucket-wide TTL: a record not refreshed within it expires (NATS 2.9 has no per-key TTL). */
  presenceTtlMs?: number;
  /** JetStream replicas for the presence bucket (3 in a three-node NATS cluster). */
  replicas?: number;
  controlSubject?: string;
  /** Failures that must not stop the bus (a bad record, a watch restart) are reported here. */
  onWarning?: (message: string, err?: unknown) => void;
}

export const DEFAULT_PRESENCE_BUCKET = 'pullplane-presence';
export const DEFAULT_CONTROL_SUBJECT = 'pullplane.control';

/**
 * Presence in a JetStream KV bucket and control events on a plain subject. The connection
 * reconnects forever; while NATS is away, routing tables keep their last view (the data
 * path never goes through NATS) and writes fail fast for the caller to retry.
 */
export async function connectNatsBus(opts: NatsBusOptions): Promise<Bus> {
  const warn = opts.onWarning ?? (() => undefined);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: opts.servers,
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      reconnectJitter: 250,
      waitOnFirstConnect: true,
      pingInterval: 5_000,
      maxPingOut: 2,
    });
  } catch (err) {
    throw new BusError(
      BusErrorCode.CONNECT_FAILED,
      `cannot connect to NATS at ${String(opts.servers)}: ${String(err)}`,
      {
        cause: err,
      },
    );
  }

  const bucketName = opts.bucket ?? DEFAULT_PRESENCE_BUCKET;
  const kvm = new Kvm(nc);
  const kvOpts = {
    ttl: opts.presenceTtlMs ?? 90_000,
    replicas: opts.replicas ?? 1,
    history: 1,
    timeout: 2_000,
  };
  let kv: KV = await kvm.create(bucketName, kvOpts);
  let closed = false;
  let status: BusStatus = 'connected';
  const statusListeners = new Set<(s: BusStatus) => void>();

  // A NATS restarted without its store loses the bucket: recreate it when writes fail.
  const withBucket = async <T>(fn: (kv: KV) => Promise<T>): Promise<T> => {
    try {
      return await fn(kv);
    } catch (err) {
      if (!/stream not found|bucket not found|no stream matches/i.test(String(err))) throw err;
      kv = await kvm.create(bucketName, kvOpts);
      return fn(kv);
    }
  };

  void (async () => {
    for await (const s of nc.status()) {
      const next: BusStatus | undefined =
        s.type === 'disconnect' ? 'disconnected' : s.type === 'reconnect' ? 'connected' : undefined;
      if (!next || next === status) continue;
      status = next;
      for (const l of statusListeners) l(next);
    }
  })().catch((err) => warn('NATS status loop ended', err));

  const controlSubject = opts.controlSubject ?? DEFAULT_CONTROL_SUBJECT;
  // Revocations never expire: a separate bucket without the presence TTL.
  const revocationBucket = `${bucketName}-revocations`;
  const revOpts = { replicas: opts.replicas ?? 1, history: 1, timeout: 2_000 };
  let revKv: KV | undefined;
  const revocations = async (): Promise<KV> => {
    revKv ??= await kvm.create(revocationBucket, revOpts);
    return revKv;
  };

  return {
    kind: 'nats',
    get status() {
      return status;
    },
    presence: {
      async put(record: PresenceRecord) {
        await withBucket((b) => b.put(presenceKey(record.agent), encodeJson(record)));
      },
      async remove(agent: string, sessionId: string) {
        await withBucket(async (b) => {
          const entry = await b.get(presenceKey(agent));
          if (entry?.operation !== 'PUT') return;
          let current: PresenceRecord;
          try {
            current = decodePresence(entry.value);
          } catch {
            return;
          }
          if (current.sessionId !== sessionId) return;
          // previousSeq makes the delete lose a race against a newer put.
          await b.delete(presenceKey(agent), { previousSeq: entry.revision }).catch((err: unknown) => {
            if (!/wrong last sequence/i.test(String(err))) throw err;
          });
        });
      },
      async get(agent: string) {
        const entry = await withBucket((b) => b.get(presenceKey(agent)));
        if (entry?.operation !== 'PUT') return undefined;
        return decodePresence(entry.value);
      },
      async list() {
        const out: PresenceRecord[] = [];
        const keys = await withBucket((b) => b.keys());
        for await (const key of keys) {
          const entry = await kv.get(key);
          if (entry?.operation !== 'PUT') continue;
          try {
            out.push(decodePresence(entry.value));
          } catch (err) {
            warn(`skipping invalid presence record ${key}`, err);
          }
        }
        return out;
      },
      async watch(listener: (event: PresenceEvent) => void) {
        let stopped = false;
        let stopCurrent: (() => void) | undefined;
        const known = new Set<string>();
        // Each (re)start replays current values; anything we knew that is absent from the
        // replay was deleted while we were not watching.
        const run = async (first: () => void) => {
          let backoff = 100;
          while (!stopped && !closed) {
            try {
              const empty = (await withBucket((b) => b.status())).values === 0;
              const iter = await withBucket((b) => b.watch({ key: '>' }));
              stopCurrent = () => iter.stop();
              const seen = new Set<string>();
              let replaying = true;
              const finishReplay = () => {
                if (!replaying) return;
                replaying = false;
                for (const agent of known) {
                  if (!seen.has(agent)) {
                    known.delete(agent);
                    listener({ type: 'delete', agent });
                  }
                }
                first();
              };
              if (empty) finishReplay();
              for await (const e of iter) {
                backoff = 100;
                if (e.operation === 'PUT') {
                  try {
                    const record = decodePresence(e.value);
                    seen.add(record.agent);
                    known.add(record.agent);
                    listener({ type: 'put', record });
                  } catch (err) {
                    warn(`ignoring invalid presence record ${e.key}`, err);
                  }
                } else if (known.delete(e.key)) {
                  listener({ type: 'delete', agent: e.key });
                }
                if (replaying && e.delta === 0) finishReplay();
              }
              finishReplay();
            } catch (err) {
              if (stopped || closed) return;
              warn('presence watch failed; restarting', err);
            }
            if (stopped || closed) return;
            await sleep(backoff);
            backoff = Math.min(backoff * 2, 5_000);
          }
        };
        await new Promise<void>((resolve) => {
          void run(resolve);
        });
        return () => {
          stopped = true;
          stopCurrent?.();
        };
      },
    },
    control: {
      async publish(event: ControlEvent) {
        nc.publish(controlSubject, encodeJson(event));
        await nc.flush();
      },
      subscribe(listener: (event: ControlEvent) => void) {
        const sub = nc.subscribe(controlSubject, {
          callback: (err, msg) => {
            if (err) return warn('control subscription error', err);
            try {
              listener(decodeControl(msg.data));
            } catch (e) {
              warn('ignoring invalid control event', e);
            }
          },
        });
        return () => sub.unsubscribe();
      },
    },
    revocations: {
      async add(r: Revocation) {
        await (await revocations()).put(revocationKey(r), encodeJson(r));
      },
      async list() {
        const kv = await revocations();
        const out: Revocation[] = [];
        for await (const key of await kv.keys()) {
          const e = await kv.get(key);
          if (e?.operation !== 'PUT') continue;
          try {
            out.push(decodeRevocation(e.value));
          } catch (err) {
            warn(`skipping invalid revocation ${key}`, err);
          }
        }
        return out;
      },
      async watch(listener: (r: Revocation) => void) {
        const kv = await revocations();
        let stopped = false;
        let stopIter: (() => void) | undefined;
        const loop = async () => {
          while (!stopped && !closed) {
            try {
              const iter = await kv.watch({ key: '>' });
              stopIter = () => iter.stop();
              for await (const e of iter) {
                if (e.operation !== 'PUT') continue;
                try {
                  listener(decodeRevocation(e.value));
                } catch (err) {
                  warn('ignoring invalid revocation', err);
                }
              }
            } catch (err) {
              if (stopped || closed) return;
              warn('revocation watch failed; restarting', err);
            }
            await sleep(500);
          }
        };
        void loop();
        // Replaying existing revocations is part of the watch, but callers also want them now.
        for (const r of await this.list()) listener(r);
        return () => {
          stopped = true;
          stopIter?.();
        };
      },
    },
    onStatus(listener) {
      statusListeners.add(listener);
      return () => statusListeners.delete(listener);
    },
    async close() {
      if (closed) return;
      closed = true;
      await nc.drain().catch(() => nc.close());
    },
  };
}
