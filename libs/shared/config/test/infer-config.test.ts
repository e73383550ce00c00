import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type CamelCase,
  type ConfigSources,
  type HostPort,
  type InferConfig,
  loadConfig,
  type ValueSource,
} from '../src/index.js';
import { principalOptions } from './fixtures.js';

// expectTypeOf is checked by the type checker (the project's typecheck target includes test/);
// each test also asserts the runtime value the types describe.
describe('InferConfig', () => {
  type Config = InferConfig<typeof principalOptions>;

  it('camel-cases flag names', () => {
    expectTypeOf<CamelCase<'keep-alive-interval'>>().toEqualTypeOf<'keepAliveInterval'>();
    expectTypeOf<CamelCase<'auth'>>().toEqualTypeOf<'auth'>();
    const { config } = loadConfig(
      [
        { flag: 'keep-alive-interval', type: 'int', default: 5, description: 'K.' },
        { flag: 'auth', type: 'string', description: 'A.' },
      ],
      { argv: ['--auth=mtls'], env: {} },
    );
    expect(config).toEqual({ keepAliveInterval: 5, auth: 'mtls' });
  });

  it('maps option types to value types and tracks presence', () => {
    expectTypeOf<Config['listenHost']>().toEqualTypeOf<string>();
    expectTypeOf<Config['listenPort']>().toEqualTypeOf<number>();
    expectTypeOf<Config['insecureTls']>().toEqualTypeOf<boolean>();
    expectTypeOf<Config['auth']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Config['logLevel']>().toEqualTypeOf<'trace' | 'debug' | 'info' | 'warn' | 'error'>();
    expectTypeOf<Config['keepAliveInterval']>().toEqualTypeOf<number>();
    expectTypeOf<Config['allowedNamespaces']>().toEqualTypeOf<string[]>();
    expectTypeOf<Config['redisUrl']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Config['serverAddress']>().toEqualTypeOf<HostPort | undefined>();
    expectTypeOf<Config['tlsCert']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Config['namespacePattern']>().toEqualTypeOf<RegExp | undefined>();
    expectTypeOf<keyof Config>().toEqualTypeOf<
      | 'listenHost'
      | 'listenPort'
      | 'insecureTls'
      | 'auth'
      | 'logLevel'
      | 'maxStreams'
      | 'keepAliveInterval'
      | 'allowedNamespaces'
      | 'redisUrl'
      | 'serverAddress'
      | 'tlsCert'
      | 'namespacePattern'
    >();
    expectTypeOf<ConfigSources<typeof principalOptions>['listenPort']>().toEqualTypeOf<ValueSource>();
    const { config, sources } = loadConfig(principalOptions, { argv: [], env: {} });
    expect(Object.keys(config).sort()).toEqual(
      [
        'listenHost',
        'listenPort',
        'insecureTls',
        'auth',
        'logLevel',
        'maxStreams',
        'keepAliveInterval',
        'allowedNamespaces',
        'redisUrl',
        'serverAddress',
        'tlsCert',
        'namespacePattern',
      ].sort(),
    );
    expect(typeof config.listenPort).toBe('number');
    expect(typeof config.insecureTls).toBe('boolean');
    expect(Array.isArray(config.allowedNamespaces)).toBe(true);
    expect(config.auth).toBeUndefined();
    expect(sources.listenPort).toEqual({ kind: 'default' });
  });

  it('makes required options non-optional and infers inline tables', () => {
    const { config } = loadConfig(
      [
        { flag: 'server', type: 'string', required: true, description: 'S.' },
        { flag: 'format', type: 'enum', values: ['json', 'text'], description: 'F.' },
      ],
      { argv: ['--server=a'], env: {} },
    );
    expectTypeOf(config.server).toEqualTypeOf<string>();
    expectTypeOf(config.format).toEqualTypeOf<'json' | 'text' | undefined>();
    expect(config).toEqual({ server: 'a', format: undefined });
  });
});
