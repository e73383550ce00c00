import { describe, expect, expectTypeOf, it } from 'vitest';
import { CatalogError, defineErrors, isErrorCatalog } from '../src/index.js';

const Errors = defineErrors('@pullplane/example', {
  GONE: { code: 'EXAMPLE_GONE', status: 410, message: 'the thing is gone' },
  BUSY: { code: 'EXAMPLE_BUSY', status: 503, message: 'try again later' },
});

class ExampleError extends CatalogError<(typeof Errors.codes)[keyof typeof Errors.codes]> {
  override readonly name = 'ExampleError';
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

describe('CatalogError', () => {
  it('carries the code, the catalog status and the message (the catalog one by default)', () => {
    const e = new ExampleError(Errors, Errors.codes.GONE, undefined, { cause: 'x' });
    expect(e).toMatchObject({
      name: 'ExampleError',
      code: 'EXAMPLE_GONE',
      statusCode: 410,
      message: 'the thing is gone',
    });
    expect(e.cause).toBe('x');
    expect(new ExampleError(Errors, Errors.codes.BUSY, 'queue full').message).toBe('queue full');
  });

  it('refuses a code its catalog does not define', () => {
    expect(() => new CatalogError(Errors, 'OTHER_CODE')).toThrow(
      'OTHER_CODE is not a code of @pullplane/example',
    );
  });
});
