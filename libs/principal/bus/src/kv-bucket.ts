import type { KV, Kvm, KvOptions } from '@nats-io/kv';
import { BusError, BusErrorCode } from './errors.js';

const MISSING = /stream not found|bucket not found|no stream matches/i;

/** The bucket's stream is gone (never created, or NATS restarted without its store). */
export function isMissingBucket(err: unknown): boolean {
  return (err as { name?: unknown } | undefined)?.name === 'StreamNotFoundError' || MISSING.test(String(err));
}

/** A compare-and-set write lost: the key's last revision was not the one expected. */
export function isWrongLastSequence(err: unknown): boolean {
  return (
    (err as { api_error?: { err_code?: unknown } } | undefined)?.api_error?.err_code === 10071 ||
    /wrong last sequence/i.test(String(err))
  );
}

/** NATS refused a subject to this identity (its role's permissions). */
export function isPermissionViolation(err: unknown): boolean {
  return /permissions violation/i.test(String(err));
}

/**
 * One KV bucket as one connection sees it. The role that owns a bucket creates it (the gateway
 * the presence bucket, the admin the revocation bucket), so its settings are the owner's; every
 * other role only opens it, and until it exists reads it as empty.
 */
export class KvBucket {
  #kv: KV | undefined;

  constructor(
    private readonly kvm: Kvm,
    readonly name: string,
    /** Settings to create it with; undefined: this connection may only open it. */
    private readonly create: Partial<KvOptions> | undefined,
    /** Who this connection is, for error messages. */
    private readonly identity: string,
  ) {}

  /** The bucket, or undefined while it does not exist and this connection may not create it. */
  async open(): Promise<KV | undefined> {
    if (this.#kv) return this.#kv;
    if (this.create) {
      this.#kv = await this.kvm.create(this.name, this.create);
      return this.#kv;
    }
    // Opening binds without a server call; the stream info says whether it exists and how
    // values are read (direct gets need allow_direct).
    try {
      const status = await (await this.kvm.open(this.name)).status();
      this.#kv = await this.kvm.open(this.name, { allow_direct: status.streamInfo.config.allow_direct });
    } catch (err) {
      if (isMissingBucket(err)) return undefined;
      throw err;
    }
    return this.#kv;
  }

  /**
   * Runs `fn` on the bucket; `absent` answers while it does not exist. `what` completes "may
   * not … bucket B" in errors (`write presence into`). A bucket that vanished
   * is opened (or, by its owner, created) again once. A refused subject becomes PERMISSION_DENIED.
   */
  async use<T>(what: string, fn: (kv: KV) => Promise<T>, absent: () => T): Promise<T> {
    const run = async () => {
      const kv = await this.open();
      return kv ? fn(kv) : absent();
    };
    try {
      try {
        return await run();
      } catch (err) {
        if (!isMissingBucket(err)) throw err;
        this.#kv = undefined;
        return await run();
      }
    } catch (err) {
      if (isPermissionViolation(err))
        throw new BusError(
          BusErrorCode.PERMISSION_DENIED,
          `NATS refused: ${this.identity} may not ${what} bucket ${this.name} (${String(err)})`,
          { cause: err },
        );
      throw err;
    }
  }

  /** Creates the bucket if missing (only for the owner), or fails with the reason. */
  async ensure(): Promise<void> {
    await this.use(
      'create',
      async () => undefined,
      () => undefined,
    );
  }

  /** The bucket's JetStream replicas, or undefined while it does not exist. */
  async replicas(): Promise<number | undefined> {
    return this.use(
      'read the settings of',
      async (kv) => (await kv.status()).streamInfo.config.num_replicas,
      () => undefined,
    );
  }

  /** For writes by a role that does not own the bucket: there is nothing to write into yet. */
  missing(what: string): never {
    throw new BusError(
      BusErrorCode.PERMISSION_DENIED,
      `cannot ${what} bucket ${this.name}: it does not exist and ${this.identity} may not create it`,
    );
  }
}
