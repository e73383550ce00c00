import { readFile } from 'node:fs/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { MaterialError, MaterialErrorCode } from './errors.js';
import { watchFiles } from './file-watch.js';
import { caBundle, earliestNotAfter, type KeyPair, keyPair, keyPem } from './material-parsers.js';
import { apiStatus, type SecretData, SecretWatch } from './secret-watch.js';

/**
 * The Secrets of one namespace an app reads material from: one watch per Secret, however many
 * pieces of material come from it.
 */
export class SecretStore {
  private readonly watches = new Map<string, { watch: SecretWatch; started: Promise<SecretData> }>();

  constructor(
    readonly kubeConfig: KubeConfig,
    readonly namespace: string,
    private readonly logger: Logger,
  ) {}

  /** The started watch of Secret `name` (shared). */
  async open(name: string): Promise<SecretWatch> {
    let entry = this.watches.get(name);
    if (!entry) {
      const watch = new SecretWatch({
        kubeConfig: this.kubeConfig,
        namespace: this.namespace,
        name,
        logger: this.logger,
      });
      entry = { watch, started: watch.start() };
      this.watches.set(name, entry);
      entry.started.catch(() => this.watches.delete(name));
    }
    await entry.started;
    return entry.watch;
  }

  stop(): void {
    for (const { watch } of this.watches.values()) watch.stop();
    this.watches.clear();
  }
}

/** Where a piece of material comes from: files (which win) or a Secret's keys. */
export interface MaterialSpec<T> {
  /** What it is, for messages: "the gateway's server certificate". */
  what: string;
  /** Its role in the service, the `kind` label of its metrics: server, client, client-ca, token-key… */
  kind: string;
  /** When the value stops being valid (a certificate's notAfter); undefined when it never does. */
  expiry?: ((value: T) => Date | undefined) | undefined;
  /** Set when files were given: read from them, never from the Secret. */
  files?: { paths: readonly string[]; parse: (contents: Buffer[]) => T } | undefined;
  secret?:
    | {
        store: SecretStore;
        name: string;
        /** The option naming the Secret, for messages (`--tls-secret-name`). */
        option: string;
        parse: (data: Readonly<Record<string, Buffer>>, where: string) => T;
      }
    | undefined;
  /** Missing material is an error; otherwise the feature it serves stays off. */
  required: boolean;
  /** How to provide it by file, for the error message: "--tls-cert and --tls-key". */
  fileOptions: string;
}

/** TLS material or a key, kept current: files and Secrets watched, both re-read on `reload()`. */
export interface Material<T> {
  readonly what: string;
  readonly kind: string;
  /** "files a, b" or "Secret ns/name". */
  readonly source: string;
  /** Undefined only for optional material that is absent. */
  readonly current: T | undefined;
  /** When the current value expires (a certificate's earliest notAfter), if it does. */
  readonly expiresAt: Date | undefined;
  /** When the current value was read. */
  readonly loadedAt: Date | undefined;
  /** Called with every new value after the first (rotation), never with an invalid one. */
  onChange(listener: (value: T) => void): void;
  /** Called when a new value could not be used (the current one is kept). */
  onFailure(listener: (err: unknown) => void): void;
  /** Reads the files or the Secret again now (SIGHUP, config-reload event). */
  reload(): Promise<void>;
  stop(): void;
}

/**
 * Opens one piece of material. Files win when given. Otherwise the Secret is read (and
 * watched): absent and required is an error naming the Secret and the file options; a change
 * that does not parse, or a deletion, keeps the last good material and is logged.
 */
export async function openMaterial<T>(spec: MaterialSpec<T>, logger: Logger): Promise<Material<T>> {
  const listeners: Array<(value: T) => void> = [];
  const failureListeners: Array<(err: unknown) => void> = [];
  const log = logger.child({ material: spec.what });
  let current: T | undefined;
  let loadedAt: Date | undefined;
  const set = (value: T) => {
    current = value;
    loadedAt = new Date();
  };
  const publish = (value: T) => {
    set(value);
    for (const l of listeners) l(value);
  };
  const fail = (err: unknown) => {
    for (const l of failureListeners) l(err);
  };
  // Built by a function so `current` and friends stay getters (a spread would copy their values).
  const common = (rest: Pick<Material<T>, 'source' | 'reload' | 'stop'>): Material<T> => ({
    ...rest,
    what: spec.what,
    kind: spec.kind,
    get current() {
      return current;
    },
    get expiresAt() {
      return current === undefined ? undefined : spec.expiry?.(current);
    },
    get loadedAt() {
      return loadedAt;
    },
    onChange: (l: (value: T) => void) => void listeners.push(l),
    onFailure: (l: (err: unknown) => void) => void failureListeners.push(l),
  });

  if (spec.files) {
    const files = spec.files;
    let fingerprint = '';
    const read = async () => {
      const contents = await Promise.all(files.paths.map((p) => readFileOrThrow(p, spec.what)));
      return { fingerprint: Buffer.concat(contents).toString('base64'), contents };
    };
    const first = await read();
    set(files.parse(first.contents));
    fingerprint = first.fingerprint;
    /** `always`: SIGHUP re-applies even unchanged files; the watch only applies changes. */
    const reread = async (always: boolean) => {
      try {
        const next = await read();
        if (!always && next.fingerprint === fingerprint) return;
        fingerprint = next.fingerprint;
        publish(files.parse(next.contents));
        log.info({ files: files.paths }, 'reloaded from files');
      } catch (err) {
        log.error({ files: files.paths, err: String(err) }, 'could not reload; keeping the current material');
        fail(err);
      }
    };
    const unwatch = watchFiles(files.paths, () => void reread(false), log);
    return common({
      source: `files ${files.paths.join(', ')}`,
      reload: () => reread(true),
      stop: unwatch,
    });
  }

  const secret = spec.secret;
  if (!secret) {
    if (spec.required) throw missing(spec, 'no file was given and no Secret can be read');
    return absent(spec);
  }
  const where = `Secret ${secret.store.namespace}/${secret.name}`;
  let watch: SecretWatch;
  try {
    watch = await secret.store.open(secret.name);
  } catch (err) {
    const code = apiStatus(err);
    throw new MaterialError(
      MaterialErrorCode.UNAVAILABLE,
      `${spec.what}: cannot read ${where} (${secret.option})${code === 403 ? ': forbidden (the service account needs get, list and watch on it)' : `: ${String(err)}`}; or give ${spec.fileOptions}`,
      { cause: err },
    );
  }
  const data = watch.current;
  if (data === undefined) {
    if (spec.required) throw missing(spec, `${where} (${secret.option}) does not exist`);
    log.info({ secret: where }, 'secret absent; feature off until it is created');
  } else {
    set(secret.parse(data, where));
  }
  const apply = (next: SecretData) => {
    if (next === undefined) {
      log.warn({ secret: where }, 'secret deleted; keeping the current material');
      return;
    }
    try {
      publish(secret.parse(next, where));
      log.info({ secret: where }, 'material reloaded from secret');
    } catch (err) {
      log.error(
        { secret: where, err: String(err) },
        'secret changed to something unusable; keeping the current material',
      );
      fail(err);
    }
  };
  watch.on('change', apply);
  return common({
    source: where,
    async reload() {
      try {
        await watch.refresh();
      } catch (err) {
        log.error(
          { secret: where, err: String(err) },
          'could not re-read the secret; keeping the current material',
        );
      }
    },
    stop: () => void watch.off('change', apply),
  });
}

function absent<T>(spec: MaterialSpec<T>): Material<T> {
  return {
    what: spec.what,
    kind: spec.kind,
    source: 'none',
    current: undefined,
    expiresAt: undefined,
    loadedAt: undefined,
    onChange() {},
    onFailure() {},
    async reload() {},
    stop() {},
  };
}

function missing(spec: { what: string; fileOptions: string }, why: string): MaterialError {
  return new MaterialError(MaterialErrorCode.NOT_FOUND, `${spec.what}: ${why}; give ${spec.fileOptions}`);
}

async function readFileOrThrow(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (cause) {
    throw new MaterialError(MaterialErrorCode.NOT_FOUND, `${what}: cannot read ${path}`, { cause });
  }
}

/** Reads a Secret key, naming the Secret and key when it is missing. */
export function secretKey(data: Readonly<Record<string, Buffer>>, key: string, where: string): Buffer {
  const v = data[key];
  if (v === undefined || v.length === 0) {
    throw new MaterialError(MaterialErrorCode.NOT_FOUND, `${where} has no key ${key}`);
  }
  return v;
}

/** A certificate and key: files (cert, key) or a kubernetes.io/tls Secret (tls.crt, tls.key). */
export function keyPairSpec(
  what: string,
  opts: {
    /** The `kind` label: server, client. */
    kind: string;
    files: { cert: string | undefined; key: string | undefined };
    secret?: { store: SecretStore; name: string; option: string } | undefined;
    required: boolean;
    fileOptions: string;
  },
): MaterialSpec<KeyPair> {
  const { cert, key } = opts.files;
  return {
    what,
    kind: opts.kind,
    expiry: (p) => earliestNotAfter(p.cert),
    required: opts.required,
    fileOptions: opts.fileOptions,
    ...(cert && key
      ? { files: { paths: [cert, key], parse: ([c, k]: Buffer[]) => keyPair(c!, k!, `${cert} and ${key}`) } }
      : {}),
    ...(opts.secret
      ? {
          secret: {
            ...opts.secret,
            parse: (d: Readonly<Record<string, Buffer>>, where: string) =>
              keyPair(secretKey(d, 'tls.crt', where), secretKey(d, 'tls.key', where), where),
          },
        }
      : {}),
  };
}

const CA_KEYS: readonly string[] = ['ca.crt', 'tls.crt'];

/**
 * A CA bundle: a file, or the certificate keys of a Secret (argocd-agent reads `tls.crt` and
 * `ca.crt` of `argocd-agent-ca`); a CA Secret's `tls.key` is never read.
 */
export function caBundleSpec(
  what: string,
  opts: {
    /** The `kind` label: ca, client-ca, redis-ca. */
    kind: string;
    file: string | undefined;
    /** `keys` default to ca.crt and tls.crt. */
    secret?: { store: SecretStore; name: string; option: string; keys?: readonly string[] } | undefined;
    required: boolean;
    fileOptions: string;
  },
): MaterialSpec<Buffer> {
  return {
    what,
    kind: opts.kind,
    expiry: earliestNotAfter,
    required: opts.required,
    fileOptions: opts.fileOptions,
    ...(opts.file
      ? {
          files: {
            paths: [opts.file],
            parse: ([pem]: Buffer[]) => caBundle([{ pem: pem!, where: opts.file! }]),
          },
        }
      : {}),
    ...(opts.secret
      ? {
          secret: {
            store: opts.secret.store,
            name: opts.secret.name,
            option: opts.secret.option,
            parse: (d: Readonly<Record<string, Buffer>>, where: string) => {
              const keys = opts.secret!.keys ?? CA_KEYS;
              const parts = keys
                .filter((k) => d[k] && d[k].length > 0)
                .map((k) => ({ pem: d[k]!, where: `${where} key ${k}` }));
              if (parts.length === 0) {
                throw new MaterialError(
                  MaterialErrorCode.NOT_FOUND,
                  `${where} has none of the keys ${keys.join(', ')}`,
                );
              }
              return caBundle(parts);
            },
          },
        }
      : {}),
  };
}

/** A PEM private key: a file, or the `jwt.key` of a Secret (argocd-agent-jwt). */
export function signingKeySpec(
  what: string,
  opts: {
    /** The `kind` label: token-key, registration-key. */
    kind: string;
    file: string | undefined;
    secret?: { store: SecretStore; name: string; option: string; key?: string } | undefined;
    required: boolean;
    fileOptions: string;
  },
): MaterialSpec<string> {
  return {
    what,
    kind: opts.kind,
    required: opts.required,
    fileOptions: opts.fileOptions,
    ...(opts.file
      ? { files: { paths: [opts.file], parse: ([pem]: Buffer[]) => keyPem(pem!, opts.file!) } }
      : {}),
    ...(opts.secret
      ? {
          secret: {
            store: opts.secret.store,
            name: opts.secret.name,
            option: opts.secret.option,
            parse: (d: Readonly<Record<string, Buffer>>, where: string) =>
              keyPem(
                secretKey(d, opts.secret!.key ?? 'jwt.key', `${where}`),
                `${where} key ${opts.secret!.key ?? 'jwt.key'}`,
              ),
          },
        }
      : {}),
  };
}
