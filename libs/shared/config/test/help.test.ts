import { describe, expect, it } from 'vitest';
import { defineOptions, parseOrExit, renderHelp, renderMarkdownTable } from '../src/index.js';
import { principalOptions } from './fixtures.js';

class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

function harness() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      stdout: (t: string) => void out.push(t),
      stderr: (t: string) => void err.push(t),
      exit: (code: number): never => {
        throw new Exit(code);
      },
    },
  };
}

describe('renderHelp', () => {
  const help = renderHelp('stream-gateway', principalOptions, {
    paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
    summary: 'The principal side of the tunnel.',
  });

  it('lists every flag with env vars, params keys, defaults and descriptions', () => {
    expect(help).toContain('Usage: stream-gateway [flags]');
    expect(help).toContain('The principal side of the tunnel.');
    expect(help).toContain('  --listen-port <port>\n      Port the gRPC server listens on.\n');
    expect(help).toContain('(0 to 65535; default 8443)');
    expect(help).toContain('env: ARGOCD_PRINCIPAL_LISTEN_PORT');
    expect(help).toContain('params: principal.listen.port');
    expect(help).toContain('env: ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT, ARGOCD_AGENT_TLS_INSECURE');
    expect(help).toContain('params: principal.tls.insecure-plaintext, principal.tls.insecure');
    expect(help).toContain('--log-level <trace|debug|info|warn|error>');
    expect(help).toContain('(one of trace, debug, info, warn, error; default info)');
    expect(help).toContain('(Go duration, at most 1h; default 30s)');
    expect(help).toContain('--insecure-tls\n');
    expect(help).toContain('(default false)');
    expect(help).toContain('(1 to 1000; default 100)');
    expect(help).toContain('default ""');
    expect(help).toContain('--params-file <path>');
    expect(help).toContain('env: ARGOCD_PRINCIPAL_PARAMS_FILE');
    expect(help).toContain('-h, --help');
  });

  it('masks secret defaults', () => {
    const opts = defineOptions([
      { flag: 'token', type: 'string', secret: true, default: 'dev-token', description: 'Token.' },
    ]);
    const text = renderHelp('x', opts);
    expect(text).toContain('default [redacted]');
    expect(text).not.toContain('dev-token');
    expect(renderMarkdownTable(opts)).not.toContain('dev-token');
  });
});

describe('renderMarkdownTable', () => {
  it('renders one row per option plus --params-file', () => {
    const table = renderMarkdownTable(principalOptions, { paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE' });
    const lines = table.trimEnd().split('\n');
    expect(lines[0]).toBe('| Flag | Env | Params key | Default | Description |');
    expect(lines).toHaveLength(2 + principalOptions.length + 1);
    expect(table).toContain(
      '| `--listen-port` | `ARGOCD_PRINCIPAL_LISTEN_PORT` | `principal.listen.port` | `8443` | Port the gRPC server listens on. (0 to 65535) |',
    );
    expect(table).toContain('`ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT`<br>`ARGOCD_AGENT_TLS_INSECURE`');
    expect(table).toContain('| `--params-file` | `ARGOCD_PRINCIPAL_PARAMS_FILE` |');
  });

  it('escapes pipes and marks required options', () => {
    const opts = defineOptions([
      { flag: 'mode', type: 'string', required: true, description: 'Either a | b.' },
    ]);
    expect(renderMarkdownTable(opts)).toContain('Either a \\| b. **Required.** |');
  });
});

describe('parseOrExit', () => {
  it('prints help and exits 0 on --help, even with other bad flags', () => {
    const h = harness();
    expect(() =>
      parseOrExit(principalOptions, { argv: ['--bogus', '--help'], env: {}, appName: 'agent', ...h.io }),
    ).toThrow(new Exit(0));
    expect(h.out.join('')).toContain('Usage: agent [flags]');
    expect(h.err).toEqual([]);
  });

  it('prints every problem and exits 2 on bad config', () => {
    const h = harness();
    try {
      parseOrExit(principalOptions, {
        argv: ['--listen-port=x'],
        env: { ARGOCD_PRINCIPAL_LOG_LEVEL: 'loud', ARGOCD_PRINCIPAL_AUTH: 's3cr3t' },
        appName: 'agent',
        ...h.io,
      });
      expect.unreachable();
    } catch (err) {
      expect((err as Exit).code).toBe(2);
    }
    const text = h.err.join('');
    expect(text).toContain('agent: invalid configuration (2 problems):');
    expect(text).toContain('--listen-port: "x" is not a port');
    expect(text).toContain('--log-level: "loud" is not one of');
    expect(text).toContain("Run 'agent --help' for usage.");
    expect(text).not.toContain('s3cr3t');
  });

  it('returns the loaded config otherwise', () => {
    const h = harness();
    const loaded = parseOrExit(principalOptions, {
      argv: ['--listen-port=1'],
      env: {},
      appName: 'a',
      ...h.io,
    });
    expect(loaded.config.listenPort).toBe(1);
  });

  it('rethrows errors that are not configuration errors', () => {
    const h = harness();
    expect(() =>
      parseOrExit(principalOptions, {
        argv: [],
        env: {},
        appName: 'a',
        validate: () => {
          throw new Error('boom');
        },
        ...h.io,
      }),
    ).toThrow(new Exit(2)); // a throwing hook is reported as a config problem
    expect(h.err.join('')).toContain('validation failed: boom');
  });
});
