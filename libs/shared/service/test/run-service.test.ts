import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defineOptions } from '@pullplane/config';
import { principalTracingOptions } from '@pullplane/tracing';
import { afterAll, describe, expect, it } from 'vitest';
import { opsOptions, runService, type Service, type ServiceDeps, type ServiceProcess } from '../src/index.js';

const options = defineOptions([
  {
    flag: 'listen-port',
    type: 'port',
    default: 9999,
    env: 'ARGOCD_PRINCIPAL_TEST_LISTEN_PORT',
    paramsKey: 'principal.test.listen.port',
    description: 'Port.',
  },
  {
    flag: 'weak',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_TEST_WEAK',
    description: 'Accepted, with a warning.',
  },
  {
    flag: 'off',
    type: 'boolean',
    env: 'ARGOCD_PRINCIPAL_TEST_OFF',
    description: 'Do not run.',
  },
  ...principalTracingOptions,
  ...opsOptions({ family: 'principal', component: 'resource-proxy', metricsPort: 0, healthzPort: 0 }),
]);

type Line = Record<string, unknown> & { msg: string; level: string };

class Exited extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/** A process: signals to emit, log lines, what was written, how it exited. */
function fakeProcess(argv: string[], env: Record<string, string> = {}) {
  const lines: Line[] = [];
  const out: string[] = [];
  const exits: number[] = [];
  const signals = new EventEmitter();
  let exited!: (code: number) => void;
  const exitedOnce = new Promise<number>((r) => {
    exited = r;
  });
  const proc: ServiceProcess = {
    argv,
    env,
    signals,
    // The drain's exit happens in a callback: recorded, not thrown. Configuration exits throw,
    // as parseOrExit must not go on.
    exit: ((code: number) => {
      exits.push(code);
      exited(code);
      if (code === 2 || (code === 0 && argv.includes('--help'))) throw new Exited(code);
    }) as (code: number) => never,
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Line) },
    stdout: (t) => void out.push(t),
    stderr: (t) => void out.push(t),
  };
  return { proc, lines, out, exits, signals, exitedOnce };
}

/** A service that records what is asked of it. */
function recorder(opts: { failStart?: Error; failReload?: Error } = {}) {
  const calls: string[] = [];
  let deps: ServiceDeps | undefined;
  let config: unknown;
  const service: Service & { calls: string[] } = {
    calls,
    async start() {
      calls.push('start');
      if (opts.failStart) throw opts.failStart;
    },
    async stop() {
      calls.push('stop');
    },
    async reload() {
      calls.push('reload');
      if (opts.failReload) throw opts.failReload;
    },
  };
  return {
    service,
    calls,
    deps: () => deps,
    config: () => config,
    built: (c: unknown, d: ServiceDeps) => {
      config = c;
      deps = d;
    },
  };
}

const dir = mkdtempSync(path.join(tmpdir(), 'run-service-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spec = (r: ReturnType<typeof recorder>) =>
  ({
    name: 'resource-proxy',
    summary: 'A test service.',
    options,
    family: 'principal',
    validate: (c: { listenPort: number }) => (c.listenPort === 1 ? ['--listen-port 1 is refused'] : []),
    warnings: (c: { weak: boolean }) => (c.weak ? ['--weak is weak'] : []),
    disabled: (c: { off: boolean }) => (c.off ? 'switched off (--off); exiting' : undefined),
    logFields: () => ({ replica: 'r1' }),
    drainTimeoutMs: () => 1_000,
    create: (c: unknown, deps: ServiceDeps) => {
      r.built(c, deps);
      return r.service;
    },
  }) as const;

describe('runService', () => {
  it('prints help and exits 0 on --help, building nothing', async () => {
    const r = recorder();
    const p = fakeProcess(['--help']);
    await expect(runService(spec(r), p.proc)).rejects.toThrow(Exited);
    expect(p.exits).toEqual([0]);
    expect(p.out.join('')).toContain('--listen-port');
    expect(p.out.join('')).toContain('ARGOCD_PRINCIPAL_PARAMS_FILE');
    expect(r.calls).toEqual([]);
  });

  it('reports every configuration problem, its own rules included, and exits 2', async () => {
    const r = recorder();
    const p = fakeProcess(['--listen-port=1', '--log-level=loud']);
    await expect(runService(spec(r), p.proc)).rejects.toThrow(Exited);
    expect(p.exits).toEqual([2]);
    const text = p.out.join('');
    expect(text).toMatch(/--log-level/);
    expect(r.calls).toEqual([]);
  });

  it('runs the cross-field rules with the process env', async () => {
    const r = recorder();
    const p = fakeProcess([], { ARGOCD_PRINCIPAL_TEST_LISTEN_PORT: '1' });
    await expect(runService(spec(r), p.proc)).rejects.toThrow(Exited);
    expect(p.out.join('')).toContain('--listen-port 1 is refused');
    expect(p.exits).toEqual([2]);
  });

  it('says why and exits 0 when the service is switched off, building nothing', async () => {
    const r = recorder();
    const p = fakeProcess(['--off']);
    await runService(spec(r), p.proc);
    expect(p.exits).toEqual([0]);
    expect(p.lines.map((l) => l.msg)).toContain('switched off (--off); exiting');
    expect(r.calls).toEqual([]);
  });

  it('starts the service with a logger, a registry and no tracer, and says ready with the params file', async () => {
    const r = recorder();
    const params = path.join(dir, 'params.yaml');
    writeFileSync(
      params,
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-agent-params}\ndata:\n  principal.test.listen.port: "7000"\n',
    );
    const p = fakeProcess(['--weak'], {
      ARGOCD_PRINCIPAL_PARAMS_FILE: params,
      ARGOCD_PRINCIPAL_NO_SUCH_THING: 'x',
    });
    const started = await runService(spec(r), p.proc);
    expect(started).toBe(r.service);
    expect(r.calls).toEqual(['start']);
    expect(r.config()).toMatchObject({ listenPort: 7000, weak: true, logLevel: 'info' });
    expect(r.deps()?.tracer).toBeUndefined();
    expect(r.deps()?.registry.getSingleMetric('process_cpu_user_seconds_total')).toBeDefined();
    const msgs = p.lines.map((l) => l.msg);
    // The unknown key, the warning and readiness, in that order; every line carries the fields.
    const unknown = p.lines.findIndex((l) => l.configName === 'ARGOCD_PRINCIPAL_NO_SUCH_THING');
    expect(unknown).toBeGreaterThanOrEqual(0);
    expect(msgs.indexOf('--weak is weak')).toBeGreaterThan(unknown);
    expect(p.lines.find((l) => l.msg === '--weak is weak')?.level).toBe('warn');
    expect(p.lines.at(-1)).toMatchObject({ msg: 'ready', paramsFile: params, replica: 'r1' });
    for (const l of p.lines) expect(l).toMatchObject({ name: 'resource-proxy', replica: 'r1' });
    p.signals.removeAllListeners();
  });

  it('reloads on SIGHUP, logging a failed reload without stopping', async () => {
    const r = recorder({ failReload: new Error('the new key is unusable') });
    const p = fakeProcess([]);
    await runService(spec(r), p.proc);
    p.signals.emit('SIGHUP');
    await expect
      .poll(() => p.lines.find((l) => l.msg === 'reload failed'))
      .toMatchObject({
        err: 'Error: the new key is unusable',
      });
    expect(r.calls).toEqual(['start', 'reload']);
    expect(p.exits).toEqual([]);
    p.signals.removeAllListeners();
  });

  it('drains on SIGTERM: stops the service, then exits 0', async () => {
    const r = recorder();
    const p = fakeProcess([]);
    await runService(spec(r), p.proc);
    p.signals.emit('SIGTERM');
    expect(await p.exitedOnce).toBe(0);
    expect(r.calls).toEqual(['start', 'stop']);
    expect(p.lines.map((l) => l.msg)).toContain('shutdown complete');
    p.signals.removeAllListeners();
  });

  it('fails loudly when the service cannot start: fatal line with the cause, exit 1', async () => {
    const r = recorder({ failStart: new Error('port 9999 is taken') });
    const p = fakeProcess([]);
    await runService({ ...spec(r), title: 'test proxy' }, p.proc);
    expect(p.exits).toEqual([1]);
    expect(p.lines.at(-1)).toMatchObject({
      level: 'fatal',
      msg: 'test proxy failed to start',
      err: 'Error: port 9999 is taken',
    });
    expect(p.lines.map((l) => l.msg)).not.toContain('ready');
    p.signals.removeAllListeners();
  });
});
