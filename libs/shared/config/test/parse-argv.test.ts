import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, wantsHelp } from '../src/index.js';
import { principalOptions } from './fixtures.js';

const load = (argv: string[]) => loadConfig(principalOptions, { argv, env: {} });

function problemsOf(argv: string[]): string[] {
  try {
    load(argv);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => p.message);
    throw err;
  }
  return [];
}

describe('flag parsing', () => {
  it('accepts --name=value and --name value', () => {
    expect(load(['--listen-port=1234']).config.listenPort).toBe(1234);
    expect(load(['--listen-port', '1234']).config.listenPort).toBe(1234);
  });

  it('takes the next argument even when it starts with a dash, like pflag', () => {
    const opts = [{ flag: 'offset', type: 'int', description: 'O.' }] as const;
    expect(loadConfig(opts, { argv: ['--offset', '-5'], env: {} }).config.offset).toBe(-5);
  });

  it('keeps an explicit empty flag value (unlike env)', () => {
    const { config, sources } = loadConfig(principalOptions, {
      argv: ['--listen-host='],
      env: { ARGOCD_PRINCIPAL_LISTEN_HOST: 'env-host' },
    });
    expect(config.listenHost).toBe('');
    expect(sources.listenHost.kind).toBe('flag');
  });

  it('handles booleans: --flag, --flag=true|false, --no-flag', () => {
    expect(load(['--insecure-tls']).config.insecureTls).toBe(true);
    expect(load(['--insecure-tls=false']).config.insecureTls).toBe(false);
    expect(load(['--insecure-tls=true']).config.insecureTls).toBe(true);
    const negated = loadConfig(principalOptions, {
      argv: ['--no-insecure-tls'],
      env: { ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT: 'true' },
    });
    expect(negated.config.insecureTls).toBe(false);
    expect(negated.sources.insecureTls).toEqual({ kind: 'flag', name: '--no-insecure-tls' });
  });

  it('does not let a boolean swallow the next argument', () => {
    expect(problemsOf(['--insecure-tls', 'false'])).toEqual(['unexpected argument "false"']);
  });

  it('rejects bad boolean values and values on --no-flag', () => {
    expect(problemsOf(['--insecure-tls=maybe'])).toEqual([
      '--insecure-tls: "maybe" is not a boolean (true or false) (from flag --insecure-tls)',
    ]);
    expect(problemsOf(['--no-insecure-tls=true'])).toEqual(['--no-insecure-tls: does not take a value']);
  });

  it('lets the last occurrence win for scalars and appends for lists', () => {
    expect(load(['--listen-port=1', '--listen-port=2']).config.listenPort).toBe(2);
    expect(load(['--allowed-namespaces', 'a,b', '--allowed-namespaces=c']).config.allowedNamespaces).toEqual([
      'a',
      'b',
      'c',
    ]);
  });

  it('reports unknown flags, with a hint for near misses and single dashes', () => {
    expect(problemsOf(['--listen-prot=1', '--totally-unknown', '-listen-port=5', '-x'])).toEqual([
      'unknown flag --listen-prot (did you mean --listen-port?)',
      'unknown flag --totally-unknown',
      'unknown flag -listen-port (use --listen-port)',
      'unknown flag -x',
    ]);
  });

  it('does not echo the value of an unknown flag', () => {
    expect(problemsOf(['--pasword=hunter2']).join()).not.toContain('hunter2');
  });

  it('reports a missing value', () => {
    expect(problemsOf(['--listen-port'])).toEqual(['--listen-port: needs a value']);
    expect(problemsOf(['--params-file'])).toEqual(['--params-file: needs a value']);
  });

  it('rejects positional arguments, including after --', () => {
    expect(problemsOf(['serve'])).toEqual(['unexpected argument "serve"']);
    expect(problemsOf(['--', '--listen-port=1'])).toEqual(['unexpected argument "--listen-port=1"']);
  });

  it('ignores --help in loadConfig and detects it with wantsHelp', () => {
    expect(load(['--help']).config.listenPort).toBe(8443);
    expect(wantsHelp(['--listen-port=1', '-h'])).toBe(true);
    expect(wantsHelp(['--help'])).toBe(true);
    expect(wantsHelp(['--', '--help'])).toBe(false);
    expect(wantsHelp([])).toBe(false);
  });
});
