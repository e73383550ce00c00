import { describe, expect, expectTypeOf, it } from 'vitest';
import { CatalogError, codeErrorClass, defineErrors, errorClass, isErrorCatalog } from '../src/index.js';

const Errors = defineErrors('@pullplane/example', {
  GONE: { code: 'EXAMPLE_GONE', status: 410, message: 'the thing is gone' },
  BUSY: { code: 'EXAMPLE_BUSY', status: 503, message: 'try again later' },
});

const MoreErrors = defineErrors('@pullplane/example', {
  LATE: { code: 'EXAMPLE_LATE', status: 504, message: 'too late' },
});

class ExampleError extends errorClass(Errors) {}
class WideError extends errorClass([Errors, MoreErrors]) {}
class LateError extends errorClass(MoreErrors, WideError) {}
class GoneError extends codeErrorClass(Errors, Errors.codes.GONE) {}
class BusyError extends codeErrorClass(Errors, Errors.codes.BUSY, ExampleError) {
  readonly retryInMs: number;
  constructor(retryInMs: number) {
    super(`busy, retry in ${retryInMs} ms`);
    this.retryInMs = retryInMs;
  }
}

describe('defineErrors', () => {
  it('maps each key to its code, typed as the literal', () => {
    expect(Errors.codes).toEqual({ GONE: 'EXAMPLE_GONE', BUSY: 'EXAMPLE_BUSY' });
    expectTypeOf(Errors.codes.GONE).toEqualTypeOf<'EXAMPLE_GONE'>();
    expect(Errors.spec('EXAMPLE_BUSY')).toEqual({
      code: 'EXAMPLE_BUSY',
      status: 503,
      message: 'try again later',
    });
    expect(Errors.spec('OTHER')).toBeUndefined();
    expect(isErrorCatalog(Errors)).toBe(true);
    expect(isErrorCatalog({ package: 'x', specs: {} })).toBe(false);
  });

  it('refuses keys or codes in another casing, duplicate codes, non-error statuses and empty messages', () => {
    expect(() => defineErrors('p', { Gone: { code: 'P_GONE', status: 410, message: 'm' } })).toThrow(
      'p: error key Gone is not UPPER_SNAKE',
    );
    expect(() => defineErrors('p', { GONE: { code: 'pGone', status: 410, message: 'm' } })).toThrow(
      'p: error code pGone is not UPPER_SNAKE',
    );
    expect(() =>
      defineErrors('p', {
        A: { code: 'P_X', status: 400, message: 'm' },
        B: { code: 'P_X', status: 400, message: 'm' },
      }),
    ).toThrow('p: error code P_X is defined twice');
    expect(() => defineErrors('p', { A: { code: 'P_A', status: 200, message: 'm' } })).toThrow(
      'p: P_A has status 200, not an HTTP error status',
    );
    expect(() => defineErrors('p', { A: { code: 'P_A', status: 500, message: ' ' } })).toThrow(
      'p: P_A has no message',
    );
  });
});

describe('errorClass', () => {
  it('carries the code, the catalog status and the message (the catalog one by default)', () => {
    const e = new ExampleError(Errors.codes.GONE, undefined, { cause: 'x' });
    expect(e).toMatchObject({
      name: 'ExampleError',
      code: 'EXAMPLE_GONE',
      statusCode: 410,
      message: 'the thing is gone',
    });
    expect(e.cause).toBe('x');
    expect(new ExampleError(Errors.codes.BUSY, 'queue full').message).toBe('queue full');
    expect(e).toBeInstanceOf(CatalogError);
    expect(e).toBeInstanceOf(Error);
    expectTypeOf(e.code).toEqualTypeOf<'EXAMPLE_GONE' | 'EXAMPLE_BUSY'>();
    expect(String(e)).toBe('ExampleError: the thing is gone');
  });

  it('finds each code in whichever of its catalogs defines it', () => {
    expect(new WideError('EXAMPLE_LATE')).toMatchObject({
      name: 'WideError',
      statusCode: 504,
      message: 'too late',
    });
    expect(new WideError('EXAMPLE_GONE').statusCode).toBe(410);
  });

  it('makes subclasses of a base that take only their own catalog’s codes', () => {
    const e = new LateError(MoreErrors.codes.LATE);
    expect(e).toBeInstanceOf(WideError);
    expect(e).toMatchObject({ name: 'LateError', code: 'EXAMPLE_LATE', statusCode: 504 });
    // @ts-expect-error: a code of the base's other catalog
    expect(() => new LateError('EXAMPLE_GONE')).toThrow('EXAMPLE_GONE is not a code of @pullplane/example');
  });

  it('makes classes for one failure, alone or under a base', () => {
    expect(new GoneError()).toMatchObject({ name: 'GoneError', code: 'EXAMPLE_GONE', statusCode: 410 });
    expect(new GoneError('it left').message).toBe('it left');
    const busy = new BusyError(200);
    expect(busy).toBeInstanceOf(ExampleError);
    expect(busy).toMatchObject({ name: 'BusyError', code: 'EXAMPLE_BUSY', statusCode: 503, retryInMs: 200 });
    expect(() => codeErrorClass(Errors, 'EXAMPLE_LATE' as never)).toThrow(
      'EXAMPLE_LATE is not a code of @pullplane/example',
    );
  });

  it('refuses a code its catalog does not define', () => {
    // @ts-expect-error: not a code of the catalog
    expect(() => new ExampleError('OTHER_CODE')).toThrow('OTHER_CODE is not a code of @pullplane/example');
    expect(() => new CatalogError(Errors, 'OTHER_CODE')).toThrow(
      'OTHER_CODE is not a code of @pullplane/example',
    );
  });
});
