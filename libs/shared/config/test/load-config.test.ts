import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, configSummary, defaultConfig, defineOptions, loadConfig } from '../src/index.js';
import { principalOptions, tempDir } from './fixtures.js';

const PARAMS_ENV = 'ARGOCD_PRINCIPAL_PARAMS_FILE';

function paramsFile(content: string): string {
  const file = join(tempDir(), 'params.yaml');
  writeFileSync(file, content);
  return file;
}

function load(argv: string[], env: Record<string, string> = {}) {
  return loadConfig(principalOptions, { argv, env, paramsFileEnv: PARAMS_ENV });
}

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map((p) => p.message);
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig precedence', () => {
  const file = () =>
    paramsFile(
      [
        'principal.listen.port: "7000"',
        'principal.listen.host: params-host',
        'principal.log.level: debug',
      ].join('\n'),
    );

  it('uses defaults when nothing is set', () => {
    const { config, sources, paramsFile } = load([]);
    expect(config.listenPort).toBe(8443);
    expect(config.logLevel).toBe('info');
    expect(config.insecureTls).toBe(false);
    expect(config.allowedNamespaces).toEqual([]);
    expect(config.auth).toBeUndefined();
    expect(config.keepAliveInterval).toBe(30_000);
    expect(sources.listenPort).toEqual({ kind: 'default' });
    expect(paramsFile).toBeUndefined();
  });

  it('params file beats default', () => {
    const path = file();
    const { config, sources, paramsFile } = load([], { [PARAMS_ENV]: path });
    expect(config.listenPort).toBe(7000);
    expect(sources.listenPort).toEqual({ kind: 'params', name: 'principal.listen.port', file: path });
    expect(paramsFile).toBe(path);
  });

  it('env beats params file', () => {
    const { config, sources } = load([], { [PARAMS_ENV]: file(), ARGOCD_PRINCIPAL_LISTEN_PORT: '7100' });
    expect(config.listenPort).toBe(7100);
    expect(sources.listenPort).toEqual({ kind: 'env', name: 'ARGOCD_PRINCIPAL_LISTEN_PORT' });
    expect(config.listenHost).toBe('params-host');
  });

  it('flag beats env, params file and default', () => {
    const { config, sources } = load(['--listen-port', '7200'], {
      [PARAMS_ENV]: file(),
      ARGOCD_PRINCIPAL_LISTEN_PORT: '7100',
    });
    expect(config.listenPort).toBe(7200);
    expect(sources.listenPort).toEqual({ kind: 'flag', name: '--listen-port' });
    expect(config.listenHost).toBe('params-host');
    expect(config.logLevel).toBe('debug');
    expect(config.maxStreams).toBe(100);
  });

  it('treats empty env and params values as unset', () => {
    const path = paramsFile('principal.listen.port: ""\nprincipal.log.level: warn\n');
    const { config, sources } = load([], {
      [PARAMS_ENV]: path,
      ARGOCD_PRINCIPAL_LISTEN_PORT: '',
      ARGOCD_PRINCIPAL_LOG_LEVEL: '',
    });
    expect(config.listenPort).toBe(8443);
    expect(sources.listenPort.kind).toBe('default');
    expect(config.logLevel).toBe('warn');
  });

  it('uses env aliases in order, primary first', () => {
    expect(load([], { ARGOCD_AGENT_TLS_INSECURE: 'true' }).sources.insecureTls).toEqual({
      kind: 'env',
      name: 'ARGOCD_AGENT_TLS_INSECURE',
    });
    const both = load([], {
      ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT: 'false',
      ARGOCD_AGENT_TLS_INSECURE: 'true',
    });
    expect(both.config.insecureTls).toBe(false);
    expect(both.sources.insecureTls).toEqual({
      kind: 'env',
      name: 'ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT',
    });
  });

  it('uses params key aliases', () => {
    const path = paramsFile('principal.tls.insecure: "true"\n');
    const { config, sources } = load([], { [PARAMS_ENV]: path });
    expect(config.insecureTls).toBe(true);
    expect(sources.insecureTls).toMatchObject({ kind: 'params', name: 'principal.tls.insecure' });
  });

  it('takes the params file from --params-file over the env var', () => {
    const fromFlag = paramsFile('principal.listen.port: "1111"\n');
    const fromEnv = paramsFile('principal.listen.port: "2222"\n');
    const { config } = load([`--params-file=${fromFlag}`], { [PARAMS_ENV]: fromEnv });
    expect(config.listenPort).toBe(1111);
  });

  it('accepts several params file env names', () => {
    const path = paramsFile('principal.listen.port: "3333"\n');
    const { config } = loadConfig(principalOptions, {
      argv: [],
      env: { ARGOCD_AGENT_PARAMS_FILE: path },
      paramsFileEnv: [PARAMS_ENV, 'ARGOCD_AGENT_PARAMS_FILE'],
    });
    expect(config.listenPort).toBe(3333);
  });

  it('reads an app default params path, skipping it silently when missing', () => {
    const path = paramsFile('principal.listen.port: "4444"\n');
    expect(loadConfig(principalOptions, { argv: [], env: {}, paramsFile: path }).config.listenPort).toBe(
      4444,
    );
    const missing = join(tempDir(), 'absent.yaml');
    const loaded = loadConfig(principalOptions, { argv: [], env: {}, paramsFile: missing });
    expect(loaded.config.listenPort).toBe(8443);
    expect(loaded.paramsFile).toBeUndefined();
  });

  it('reports an explicitly named params file that is missing', () => {
    const missing = join(tempDir(), 'absent.yaml');
    expect(problemsOf(() => load([], { [PARAMS_ENV]: missing }))).toEqual([
      `--params-file: ${JSON.stringify(missing)} does not exist (from env ${PARAMS_ENV})`,
    ]);
    expect(problemsOf(() => load(['--params-file', missing]))).toEqual([
      `--params-file: ${JSON.stringify(missing)} does not exist (from flag --params-file)`,
    ]);
  });

  it('resolves relative params paths against cwd', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'p.yaml'), 'principal.listen.port: "5555"\n');
    const { config } = loadConfig(principalOptions, { argv: ['--params-file', 'p.yaml'], env: {}, cwd: dir });
    expect(config.listenPort).toBe(5555);
  });
});

describe('loadConfig error reporting', () => {
  it('reports every problem at once, naming flag, value and source', () => {
    const path = paramsFile('principal.log.level: loud\nprincipal.keep-alive.interval: "30"\n');
    const problems = problemsOf(() =>
      load(['--max-streams=0', '--bogus', 'stray'], {
        [PARAMS_ENV]: path,
        ARGOCD_PRINCIPAL_LISTEN_PORT: 'abc',
        ARGOCD_PRINCIPAL_REDIS_URL: 'http://redis:6379',
      }),
    );
    expect(problems).toEqual([
      'unknown flag --bogus',
      'unexpected argument "stray"',
      '--listen-port: "abc" is not a port (0-65535) (from env ARGOCD_PRINCIPAL_LISTEN_PORT)',
      `--log-level: "loud" is not one of: trace, debug, info, warn, error (from params key principal.log.level in ${path})`,
      '--max-streams: "0" must be between 1 and 1000 (from flag --max-streams)',
      `--keep-alive-interval: "30" is not a duration (missing unit, e.g. "30s") (from params key principal.keep-alive.interval in ${path})`,
      '--redis-url: "http://redis:6379" must use scheme redis or rediss (from env ARGOCD_PRINCIPAL_REDIS_URL)',
    ]);
  });

  it('formats a readable message with a stable code', () => {
    try {
      load([], { ARGOCD_PRINCIPAL_LISTEN_PORT: 'abc', ARGOCD_PRINCIPAL_MAX_STREAMS: 'x' });
      expect.unreachable();
    } catch (err) {
      const e = err as ConfigError;
      expect(e.code).toBe('CONFIG_INVALID');
      expect(e.message).toBe(
        [
          'invalid configuration (2 problems):',
          '  - --listen-port: "abc" is not a port (0-65535) (from env ARGOCD_PRINCIPAL_LISTEN_PORT)',
          '  - --max-streams: "x" is not an integer (from env ARGOCD_PRINCIPAL_MAX_STREAMS)',
        ].join('\n'),
      );
      expect(e.problems[0]).toMatchObject({
        option: 'listen-port',
        source: 'env ARGOCD_PRINCIPAL_LISTEN_PORT',
      });
    }
  });

  it('never echoes secret values', () => {
    const secretOpts = defineOptions([
      {
        flag: 'token',
        type: 'string',
        pattern: /[a-f0-9]{8}/,
        secret: true,
        env: 'TOKEN',
        description: 'API token.',
      },
      { flag: 'pin', type: 'int', secret: true, min: 1000, env: 'PIN', description: 'PIN.' },
    ]);
    const problems = problemsOf(() =>
      loadConfig(secretOpts, { argv: ['--token', 'hunter2-SECRET'], env: { PIN: '42' } }),
    );
    expect(problems).toEqual([
      '--token: value does not match /[a-f0-9]{8}/ (from flag --token)',
      '--pin: value must be at least 1000 (from env PIN)',
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems.join('\n')).not.toContain('42');
  });

  it('keeps secret-looking params content out of YAML errors', () => {
    const path = paramsFile('principal.auth: "mtls:supersecret"\n  bad: : indent\n');
    const problems = problemsOf(() => load([], { [PARAMS_ENV]: path }));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toContain('is not valid YAML');
    expect(problems.join('\n')).not.toContain('supersecret');
  });

  it('reports missing required options with where to set them', () => {
    const opts = defineOptions([
      {
        flag: 'server-address',
        type: 'string',
        required: true,
        env: 'ARGOCD_AGENT_REMOTE_SERVER',
        paramsKey: 'agent.server.address',
        description: 'Principal address.',
      },
    ]);
    expect(problemsOf(() => loadConfig(opts, { argv: [], env: {} }))).toEqual([
      '--server-address: is required (set --server-address, env ARGOCD_AGENT_REMOTE_SERVER or params key agent.server.address)',
    ]);
    expect(
      loadConfig(opts, { argv: [], env: { ARGOCD_AGENT_REMOTE_SERVER: 'p:443' } }).config.serverAddress,
    ).toBe('p:443');
  });

  it('runs the cross-field hook and joins its messages to the report', () => {
    const validate = (cfg: { insecureTls: boolean; tlsCert: string | undefined }) =>
      !cfg.insecureTls && cfg.tlsCert === undefined
        ? ['--tls-cert is required unless --insecure-tls is set']
        : [];
    expect(
      problemsOf(() => loadConfig(principalOptions, { argv: [], env: {}, validate: (cfg) => validate(cfg) })),
    ).toEqual(['--tls-cert is required unless --insecure-tls is set']);
    expect(
      loadConfig(principalOptions, { argv: ['--insecure-tls'], env: {}, validate: (cfg) => validate(cfg) })
        .config.insecureTls,
    ).toBe(true);
  });

  it('passes sources to the hook and reports a throwing hook', () => {
    const problems = problemsOf(() =>
      loadConfig(principalOptions, {
        argv: [],
        env: {},
        validate: (_cfg, sources) => {
          expect(sources.listenPort.kind).toBe('default');
          throw new Error('boom');
        },
      }),
    );
    expect(problems).toEqual(['validation failed: boom']);
  });

  it('skips the hook while single values are invalid, since the config is incomplete', () => {
    let called = false;
    const problems = problemsOf(() =>
      loadConfig(principalOptions, {
        argv: ['--listen-port=x'],
        env: {},
        validate: () => {
          called = true;
          return ['cross'];
        },
      }),
    );
    expect(called).toBe(false);
    expect(problems).toHaveLength(1);
  });
});

describe('configSummary', () => {
  it('lists values with their sources and redacts secrets', () => {
    const loaded = load(['--auth', 'userpass:hunter2', '--server-address', '[::1]:8443'], {
      ARGOCD_PRINCIPAL_NAMESPACE_PATTERN: '^argo-.*$',
    });
    const summary = configSummary(principalOptions, loaded);
    expect(summary.auth).toEqual({ value: '[redacted]', source: 'flag --auth' });
    expect(summary.listenPort).toEqual({ value: 8443, source: 'default' });
    expect(summary.keepAliveInterval).toEqual({ value: '30s', source: 'default' });
    expect(summary.serverAddress).toEqual({ value: '[::1]:8443', source: 'flag --server-address' });
    expect(summary.namespacePattern).toEqual({
      value: '^argo-.*$',
      source: 'env ARGOCD_PRINCIPAL_NAMESPACE_PATTERN',
    });
    expect(JSON.stringify(summary)).not.toContain('hunter2');
  });
});

describe('defaultConfig', () => {
  const options = defineOptions([
    {
      flag: 'listen-port',
      type: 'port',
      default: 8443,
      env: 'ARGOCD_PRINCIPAL_X_PORT',
      description: 'Port.',
    },
    {
      flag: 'drain-timeout',
      type: 'duration',
      default: '30s',
      env: 'ARGOCD_PRINCIPAL_X_DRAIN',
      description: 'Drain.',
    },
    { flag: 'plaintext', type: 'boolean', env: 'ARGOCD_PRINCIPAL_X_PLAINTEXT', description: 'Plaintext.' },
    { flag: 'cert', type: 'file', env: 'ARGOCD_PRINCIPAL_X_CERT', description: 'Cert.' },
  ]);

  it("is what the defaults make, parsed as from the command line, whatever this process's env holds", () => {
    process.env.ARGOCD_PRINCIPAL_X_PORT = '1';
    try {
      expect(defaultConfig(options)).toEqual({
        listenPort: 8443,
        drainTimeout: 30_000,
        plaintext: false,
        cert: undefined,
      });
    } finally {
      delete process.env.ARGOCD_PRINCIPAL_X_PORT;
    }
  });

  it('refuses a table with a required option: a default config cannot exist', () => {
    const required = defineOptions([
      {
        flag: 'server-address',
        type: 'string',
        required: true,
        env: 'ARGOCD_AGENT_X',
        description: 'Server.',
      },
    ]);
    expect(() => defaultConfig(required)).toThrow(ConfigError);
  });
});
