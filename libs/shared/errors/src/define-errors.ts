/** What one error means: its stable code, the HTTP status it answers with, and its meaning. */
export interface ErrorSpec {
  /** Stable, UPPER_SNAKE, unique across the workspace: log pipelines and alerts match on it. */
  readonly code: string;
  /** The HTTP status a service answers with when this error reaches a caller. */
  readonly status: number;
  /** What happened, in a sentence: the default message and the line in docs/errors.md. */
  readonly message: string;
}

export type ErrorSpecs = Readonly<Record<string, ErrorSpec>>;

const CATALOG = Symbol.for('pullplane.error-catalog');
const UPPER_SNAKE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

export interface ErrorCatalog<S extends ErrorSpecs = ErrorSpecs> {
  readonly [CATALOG]: true;
  /** The package that owns these codes, e.g. `@pullplane/tunnel`. */
  readonly package: string;
  readonly specs: S;
  /** `codes.KEY` is the code string: `TunnelErrors.codes.CANCELLED === 'TUNNEL_STREAM_CANCELLED'`. */
  readonly codes: { readonly [K in keyof S]: S[K]['code'] };
  /** The spec of a code of this catalog (undefined for a foreign code). */
  spec(code: string): ErrorSpec | undefined;
}

/** The codes of a catalog (of each catalog, for a union of catalogs). */
export type CodeOf<C extends ErrorCatalog> = C extends ErrorCatalog ? C['codes'][keyof C['codes']] : never;

/**
 * Declares a package's error codes. Keys and codes are UPPER_SNAKE, codes unique and statuses
 * HTTP error statuses; a catalog that breaks these rules throws when its module loads, so a
 * mistake cannot ship. `scripts/error-docs.mjs` lists every catalog in docs/errors.md.
 */
export function defineErrors<const S extends ErrorSpecs>(pkg: string, specs: S): ErrorCatalog<S> {
  const byCode = new Map<string, ErrorSpec>();
  const codes: Record<string, string> = {};
  for (const [key, spec] of Object.entries(specs)) {
    if (!UPPER_SNAKE.test(key)) throw new TypeError(`${pkg}: error key ${key} is not UPPER_SNAKE`);
    if (!UPPER_SNAKE.test(spec.code))
      throw new TypeError(`${pkg}: error code ${spec.code} is not UPPER_SNAKE`);
    if (byCode.has(spec.code)) throw new TypeError(`${pkg}: error code ${spec.code} is defined twice`);
    if (!Number.isInteger(spec.status) || spec.status < 400 || spec.status > 599)
      throw new TypeError(`${pkg}: ${spec.code} has status ${spec.status}, not an HTTP error status`);
    if (spec.message.trim() === '') throw new TypeError(`${pkg}: ${spec.code} has no message`);
    byCode.set(spec.code, spec);
    codes[key] = spec.code;
  }
  return {
    [CATALOG]: true,
    package: pkg,
    specs,
    codes: Object.freeze(codes) as ErrorCatalog<S>['codes'],
    spec: (code) => byCode.get(code),
  };
}

export function isErrorCatalog(value: unknown): value is ErrorCatalog {
  return typeof value === 'object' && value !== null && (value as { [CATALOG]?: unknown })[CATALOG] === true;
}

/**
 * The base of every package's error class: a stable `code` from the package's catalog and the
 * `statusCode` that catalog gives it, so the one boundary that answers callers needs no table of
 * its own. Packages do not extend it by hand: `errorClass` (error-class.ts) makes their class.
 */
export class CatalogError<Code extends string = string> extends Error {
  readonly code: Code;
  readonly statusCode: number;

  constructor(catalog: ErrorCatalog, code: Code, message?: string, options?: { cause?: unknown }) {
    const spec = catalog.spec(code);
    if (!spec) throw new TypeError(`${code} is not a code of ${catalog.package}`);
    super(message ?? spec.message, options);
    // Named after the declared class (`class BusError extends errorClass(…)`), as logs show it.
    this.name = new.target.name || 'CatalogError';
    this.code = code;
    this.statusCode = spec.status;
  }
}
