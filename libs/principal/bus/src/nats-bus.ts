import { setTimeout as sleep } from 'node:timers/promises';
import { type KV, type KvEntry, Kvm } from '@nats-io/kv';
import {
  decodeControl,
  decodePresence,
  decodeRevocation,
  encodeJson,
  encodePresence,
  presenceKey,
  revocationKey,
} from './codec.js';
import { BusError, BusErrorCode } from './errors.js';
import { isPermissionViolation, isWrongLastSequence, KvBucket } from './kv-bucket.js';
import { connectOnce } from './nats-connect.js';
import type { NatsConnectionSecurity } from './nats-credentials.js';
import type {
  Bus,
  BusStatus,
  ControlEvent,
  PresenceEvent,
  PresenceRecord,
  PresenceRefresh,
  Revocation,
} from './types.js';

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
  /** Identity and TLS (from `natsConnectionSecurity`); none when omitted. */
  security?: NatsConnectionSecurity;
  /**
   * The buckets this connection creates when they are missing: the role that owns a bucket
   * (the gateway presence, the admin revocations). Others only open them and read a missing
   * one as empty. Default: both, for a NATS without permissions.
   */
  creates?: readonly BusBucket[];
  /** Give up on an unreachable NATS after this long (default: keep trying, NATS may start later). */
  firstConnectTimeoutMs?: number;
}

export type BusBucket = 'presence' | 'revocations';

/** Claims retried against concurrent writes of the same key before giving up (the caller retries later). */
const CLAIM_ATTEMPTS = 10;

export const DEFAULT_PRESENCE_BUCKET = 'pullplane-presence';
export const DEFAULT_CONTROL_SUBJECT = 'pullplane.control';
/** The revocation bucket is named after the presence bucket. */
export const revocationBucketName = (presenceBucket: string) => `${presenceBucket}-revocations`;

/**
 * Presence in a JetStream KV bucket and control events on a plain subject. The connection
 * reconnects forever; while NATS is away, routing tables keep their last view (the data
 * path never goes through NATS) and writes fail fast for the caller to retry.
 */
export async function connectNatsBus(opts: NatsBusOptions): Promise<Bus> {
  const warn = opts.onWarning ?? (() => undefined);
  const identity = opts.security?.identity ?? 'none';
  const nc = await connectOnce(opts, identity, warn);

  const creates = new Set(opts.creates ?? ['presence', 'revocations']);
  const kvm = new Kvm(nc);
  const bucketName = opts.bucket ?? DEFAULT_PRESENCE_BUCKET;
  const presence = new KvBucket(
    kvm,
    bucketName,
    creates.has('presence')
      ? { ttl: opts.presenceTtlMs ?? 90_000, replicas: opts.replicas ?? 1, history: 1, timeout: 2_000 }
      : undefined,
    identity,
  );
  let revocations: KvBucket;
  try {
    // The owner creates its bucket now: a missing permission fails startup, not a later write.
    if (creates.has('presence')) await presence.ensure();
    // Revocations never expire: a separate bucket without the presence TTL. Its owner (the
    // admin's CLI) has no replica setting of its own: it gives it as many replicas as the
    // gateways gave presence, so a NATS node lost loses no revocation either.
    const replicas = creates.has('revocations')
      ? (opts.replicas ?? (await presence.replicas()) ?? 1)
      : undefined;
    revocations = new KvBucket(
      kvm,
      revocationBucketName(bucketName),
      replicas === undefined ? undefined : { replicas, history: 1, timeout: 2_000 },
      identity,
    );
    if (creates.has('revocations')) await revocations.ensure();
  } catch (err) {
    await nc.close();
    throw err;
  }

  let closed = false;
  let status: BusStatus = 'connected';
  const statusListeners = new Set<(s: BusStatus) => void>();
  const controlSubject = opts.controlSubject ?? DEFAULT_CONTROL_SUBJECT;
  let controlDenials = 0;

  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'error') {
        const subject = (s.error as { subject?: unknown }).subject;
        if (isPermissionViolation(s.error)) {
          if (subject === controlSubject) controlDenials++;
          // A watch that resets removes its old consumer if it may; the roles may not (the
          // server expires it), so that refusal is expected and not worth a warning.
          if (!String(subject).startsWith('$JS.API.CONSUMER.DELETE.'))
            warn(`NATS denied a subject to ${identity} (its role's permissions)`, s.error);
        } else if ((s.error as { name?: unknown }).name === 'AuthorizationError') {
          // After a key rotation the seed file catches up within the kubelet's sync period.
          warn(
            `NATS refused ${identity} on reconnect; retrying with the credentials files read again`,
            s.error,
          );
        }
        continue;
      }
      const next: BusStatus | undefined =
        s.type === 'disconnect' ? 'disconnected' : s.type === 'reconnect' ? 'connected' : undefined;
      if (!next || next === status) continue;
      status = next;
      for (const l of statusListeners) l(next);
    }
  })().catch((err) => warn('NATS status loop ended', err));

  return {
    kind: 'nats',
    get status() {
      return status;
    },
    presence: {
      async put(record: PresenceRecord) {
        const key = presenceKey(record.agent);
        const value = encodePresence(record);
        return presence.use(
          'write presence into',
          async (kv) => {
            // Another write between the read and ours (another claim, a refresh) means another
            // read: a claim always ends up written, on top of whatever was last.
            for (let attempt = 1; ; attempt++) {
              const entry = await kv.get(key);
              try {
                return entry
                  ? await kv.update(key, value, entry.revision)
                  : await kv.put(key, value, { previousSeq: 0 });
              } catch (err) {
                if (!isWrongLastSequence(err) || attempt >= CLAIM_ATTEMPTS) throw err;
              }
            }
          },
          () => presence.missing('write presence into'),
        );
      },
      async refresh(record: PresenceRecord, revision: number) {
        const key = presenceKey(record.agent);
        const value = encodePresence(record);
        return presence.use(
          'write presence into',
          async (kv): Promise<PresenceRefresh> => {
            try {
              return { held: true, revision: await kv.update(key, value, revision) };
            } catch (err) {
              if (!isWrongLastSequence(err)) throw err;
            }
            const entry = await kv.get(key);
            if (!entry) {
              // Expired (or the store lost it): nothing newer exists, so the holder writes it again.
              try {
                return { held: true, revision: await kv.put(key, value, { previousSeq: 0 }) };
              } catch (err) {
                if (!isWrongLastSequence(err)) throw err;
                return { held: false, current: await readRecord(kv, key, warn) };
              }
            }
            const current = entry.operation === 'PUT' ? decodeEntry(entry, warn) : undefined;
            // Our own write whose answer was lost: still ours, at the revision the store holds.
            if (current?.sessionId === record.sessionId)
              return { held: true, revision: await kv.update(key, value, entry.revision) };
            return { held: false, current };
          },
          () => presence.missing('write presence into'),
        );
      },
      async remove(agent: string, sessionId: string) {
        await presence.use(
          'remove presence from',
          async (kv) => {
            const entry = await kv.get(presenceKey(agent));
            if (entry?.operation !== 'PUT') return;
            let current: PresenceRecord;
            try {
              current = decodePresence(entry.value);
            } catch {
              return;
            }
            if (current.sessionId !== sessionId) return;
            // previousSeq makes the delete lose a race against a newer put.
            await kv.delete(presenceKey(agent), { previousSeq: entry.revision }).catch((err: unknown) => {
              if (!isWrongLastSequence(err)) throw err;
            });
          },
          () => undefined,
        );
      },
      async get(agent: string) {
        const entry = await presence.use(
          'read presence from',
          (kv) => kv.get(presenceKey(agent)),
          () => null,
        );
        if (entry?.operation !== 'PUT') return undefined;
        return { ...decodePresence(entry.value), revision: entry.revision };
      },
      async list() {
        return presence.use(
          'list',
          (kv) =>
            readAll(
              kv,
              (value, revision) => ({ ...decodePresence(value), revision }),
              'presence record',
              warn,
            ),
          () => [],
        );
      },
      async watch(listener: (event: PresenceEvent) => void) {
        let stopped = false;
        let stopCurrent: (() => void) | undefined;
        const known = new Set<string>();
        // Each (re)start replays current values; anything we knew that is absent from the
        // replay was deleted while we were not watching.
        let replayed = false;
        const run = async (first: () => void, refused: (err: unknown) => void) => {
          let backoff = 100;
          let toldMissing = false;
          while (!stopped && !closed) {
            try {
              const started = await presence.use(
                'watch',
                async (kv) => ({
                  empty: (await kv.status()).values === 0,
                  iter: await kv.watch({ key: '>' }),
                }),
                () => undefined,
              );
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
              if (!started) {
                // Not created yet (no gateway has started): empty until it is.
                finishReplay();
                if (!toldMissing)
                  warn(
                    `presence bucket ${presence.name} does not exist yet; reading it as empty until a gateway creates it`,
                  );
                toldMissing = true;
              } else {
                toldMissing = false;
                const { empty, iter } = started;
                stopCurrent = () => iter.stop();
                if (empty) finishReplay();
                for await (const e of iter) {
                  backoff = 100;
                  if (e.operation === 'PUT') {
                    try {
                      const record = { ...decodePresence(e.value), revision: e.revision };
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
              }
            } catch (err) {
              if (stopped || closed) return;
              // A role without the permission to watch will never get it: fail the caller's startup.
              if (!replayed && err instanceof BusError && err.code === BusErrorCode.PERMISSION_DENIED)
                return refused(err);
              warn('presence watch failed; restarting', err);
            }
            if (stopped || closed) return;
            await sleep(backoff);
            backoff = Math.min(backoff * 2, 5_000);
          }
        };
        await new Promise<void>((resolve, reject) => {
          void run(() => {
            replayed = true;
            resolve();
          }, reject);
        });
        return () => {
          stopped = true;
          stopCurrent?.();
        };
      },
    },
    control: {
      async publish(event: ControlEvent) {
        const before = controlDenials;
        nc.publish(controlSubject, encodeJson(event));
        // The server answers a refused publish before the flush's PONG; the status loop has
        // seen it once the microtasks queued with it have run.
        await nc.flush();
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (controlDenials !== before)
          throw new BusError(
            BusErrorCode.PERMISSION_DENIED,
            `NATS denied publishing control events on ${controlSubject} to ${identity}`,
          );
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
        await revocations.use(
          'store a revocation in',
          (kv) => kv.put(revocationKey(r), encodeJson(r)),
          () => revocations.missing('store a revocation in'),
        );
      },
      async list() {
        return revocations.use(
          'list',
          (kv) => readAll(kv, decodeRevocation, 'revocation', warn),
          () => [],
        );
      },
      async watch(listener: (r: Revocation) => void) {
        let stopped = false;
        let stopIter: (() => void) | undefined;
        const loop = async () => {
          let backoff = 500;
          let toldMissing = false;
          while (!stopped && !closed) {
            try {
              const iter = await revocations.use(
                'watch',
                (kv) => kv.watch({ key: '>' }),
                () => undefined,
              );
              if (!iter) {
                // Nobody has revoked anything yet; the control event of the first revocation
                // arrives meanwhile, and this watch picks the bucket up when it appears.
                if (!toldMissing)
                  warn(
                    `revocation bucket ${revocations.name} does not exist yet (nothing revoked so far); polling for it`,
                  );
                toldMissing = true;
              } else {
                toldMissing = false;
                backoff = 500;
                stopIter = () => iter.stop();
                for await (const e of iter) {
                  if (e.operation !== 'PUT') continue;
                  try {
                    listener(decodeRevocation(e.value));
                  } catch (err) {
                    warn('ignoring invalid revocation', err);
                  }
                }
              }
            } catch (err) {
              if (stopped || closed) return;
              warn('revocation watch failed; restarting', err);
            }
            if (stopped || closed) return;
            await sleep(backoff);
            backoff = Math.min(backoff * 2, 5_000);
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

/** A presence entry's record with its revision; an invalid one is reported and read as none. */
function decodeEntry(
  entry: KvEntry,
  warn: (message: string, err?: unknown) => void,
): PresenceRecord | undefined {
  try {
    return { ...decodePresence(entry.value), revision: entry.revision };
  } catch (err) {
    warn(`ignoring invalid presence record ${entry.key}`, err);
    return undefined;
  }
}

async function readRecord(
  kv: KV,
  key: string,
  warn: (message: string, err?: unknown) => void,
): Promise<PresenceRecord | undefined> {
  const entry = await kv.get(key);
  return entry?.operation === 'PUT' ? decodeEntry(entry, warn) : undefined;
}

/** Every current value of a bucket, decoded; invalid ones are reported and skipped. */
async function readAll<T>(
  kv: KV,
  decode: (bytes: Uint8Array, revision: number) => T,
  what: string,
  warn: (message: string, err?: unknown) => void,
): Promise<T[]> {
  const out: T[] = [];
  for await (const key of await kv.keys()) {
    const e = await kv.get(key);
    if (e?.operation !== 'PUT') continue;
    try {
      out.push(decode(e.value, e.revision));
    } catch (err) {
      warn(`skipping invalid ${what} ${key}`, err);
    }
  }
  return out;
}
