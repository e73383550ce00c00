import { CatalogError, type CodeOf, type ErrorCatalog } from './define-errors.js';

export interface ErrorOptions {
  cause?: unknown;
}

/** A class made by `errorClass`: `new Cls(code, message?, options?)`, for any code of its catalogs. */
export interface ErrorClass<Code extends string, E extends CatalogError<Code> = CatalogError<Code>> {
  new (code: Code, message?: string, options?: ErrorOptions): E;
  readonly prototype: E;
}

/** A class made by `codeErrorClass`: the one failure its code names, `new Cls(message?, options?)`. */
export interface CodeErrorClass<Code extends string, E extends CatalogError<Code> = CatalogError<Code>> {
  new (message?: string, options?: ErrorOptions): E;
  readonly prototype: E;
}

// biome-ignore lint/suspicious/noExplicitAny: a base of any code set; subclasses narrow it.
type AnyErrorClass<E extends CatalogError> = ErrorClass<any, E>;

function catalogFinder(catalogs: readonly ErrorCatalog[]): (code: string) => ErrorCatalog {
  const only = catalogs[0];
  if (!only) throw new TypeError('an error class needs at least one catalog');
  if (catalogs.length === 1) return () => only;
  return (code) => catalogs.find((c) => c.spec(code) !== undefined) ?? only;
}

/**
 * The error class of a package, so no package writes a constructor, a `name` or a catalog
 * lookup by hand: `export class BusError extends errorClass(BusErrors) {}`. Instances take any
 * code of the catalogs (several for a package whose codes span catalogs), carry its `statusCode`,
 * and are named after the declared class. With `base` (a class made here), the new class is a
 * subclass of it that takes only this catalog's codes: `class TokenError extends
 * errorClass(TokenErrors, AuthError) {}`.
 */
export function errorClass<C extends ErrorCatalog, E extends CatalogError = CatalogError<CodeOf<C>>>(
  catalogs: C | readonly C[],
  base?: AnyErrorClass<E>,
): ErrorClass<CodeOf<C>, E & CatalogError<CodeOf<C>>> {
  const find = catalogFinder(Array.isArray(catalogs) ? catalogs : [catalogs as C]);
  if (base) {
    const Base = base as unknown as new (
      code: string,
      message?: string,
      options?: ErrorOptions,
    ) => CatalogError;
    // The base looks its code up in its own catalogs; check here that the code is one of ours.
    return class extends Base {
      constructor(code: CodeOf<C>, message?: string, options?: ErrorOptions) {
        const catalog = find(code);
        if (!catalog.spec(code)) throw new TypeError(`${code} is not a code of ${catalog.package}`);
        super(code, message, options);
      }
    } as unknown as ErrorClass<CodeOf<C>, E & CatalogError<CodeOf<C>>>;
  }
  return class extends CatalogError<CodeOf<C>> {
    constructor(code: CodeOf<C>, message?: string, options?: ErrorOptions) {
      super(find(code), code, message, options);
    }
  } as unknown as ErrorClass<CodeOf<C>, E & CatalogError<CodeOf<C>>>;
}

/**
 * A class for one failure, named by one code: `new OptionDefinitionError(message)`.
 * `export class UsageError extends codeErrorClass(CliErrors, CliErrors.codes.USAGE) {}`; with
 * `base` (a class made by `errorClass`), a subclass of it.
 */
export function codeErrorClass<
  C extends ErrorCatalog,
  K extends CodeOf<C>,
  E extends CatalogError = CatalogError<K>,
>(catalog: C, code: K, base?: AnyErrorClass<E>): CodeErrorClass<K, E & CatalogError<K>> {
  if (!catalog.spec(code)) throw new TypeError(`${code} is not a code of ${catalog.package}`);
  if (base) {
    const Base = base as unknown as new (
      code: string,
      message?: string,
      options?: ErrorOptions,
    ) => CatalogError;
    return class extends Base {
      constructor(message?: string, options?: ErrorOptions) {
        super(code, message, options);
      }
    } as unknown as CodeErrorClass<K, E & CatalogError<K>>;
  }
  return class extends CatalogError<K> {
    constructor(message?: string, options?: ErrorOptions) {
      super(catalog, code, message, options);
    }
  } as unknown as CodeErrorClass<K, E & CatalogError<K>>;
}
