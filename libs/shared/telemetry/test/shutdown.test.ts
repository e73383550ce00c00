import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createLogger, installShutdown, type SignalSource } from '../src/index.js';

function setup() {
  const lines: { msg: string; level: string; durationMs?: number; signal?: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  const logger = createLogger({ level: 'info', name: 'test', destination });
  const proc = new EventEmitter();
  const exit = vi.fn<(code: number) => void>();
  return { lines, logger, proc: proc as EventEmitter & SignalSource, exit };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('installShutdown', () => {
  it('runs shutdown once on the first signal, logs start/end with duration and exits 0', async () => {
    const { lines, logger, proc, exit } = setup();
    const shutdown = vi.fn(async (_signal: NodeJS.Signals) => {
      await new Promise((r) => setTimeout(r, 250)); // wait-ok: a slow shutdown hook is the scenario
    });
    installShutdown({ logger, drainTimeoutMs: 5_000, shutdown, exit, process: proc });
    proc.emit('SIGTERM');
    expect(shutdown).toHaveBeenCalledExactlyOnceWith('SIGTERM');
    expect(exit).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(250);
    expect(exit).toHaveBeenCalledExactlyOnceWith(0);
    expect(lines.map((l) => l.msg)).toEqual(['shutdown started', 'shutdown complete']);
    expect(lines[0]?.signal).toBe('SIGTERM');
    expect(lines[1]?.durationMs).toBe(250);
    // The force-exit timer was cleared.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(exit).toHaveBeenCalledTimes(1);
  });

  it('forces exit 1 when shutdown overruns drainTimeoutMs + grace', async () => {
    const { lines, logger, proc, exit } = setup();
    const shutdown = vi.fn(() => new Promise<void>(() => {}));
    installShutdown({ logger, drainTimeoutMs: 1_000, graceMs: 500, shutdown, exit, process: proc });
    proc.emit('SIGINT');
    await vi.advanceTimersByTimeAsync(1_499);
    expect(exit).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(exit).toHaveBeenCalledExactlyOnceWith(1);
    expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'shutdown timed out, forcing exit' });
  });

  it('uses a 1 s grace by default', async () => {
    const { logger, proc, exit } = setup();
    installShutdown({
      logger,
      drainTimeoutMs: 2_000,
      shutdown: () => new Promise(() => {}),
      exit,
      process: proc,
    });
    proc.emit('SIGTERM');
    await vi.advanceTimersByTimeAsync(2_999);
    expect(exit).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(exit).toHaveBeenCalledWith(1);
  });

  it('exits 1 at once on a second signal, and ignores later completion', async () => {
    const { lines, logger, proc, exit } = setup();
    let release!: () => void;
    const shutdown = vi.fn(() => new Promise<void>((r) => (release = r)));
    installShutdown({ logger, drainTimeoutMs: 10_000, shutdown, exit, process: proc });
    proc.emit('SIGTERM');
    proc.emit('SIGINT');
    expect(shutdown).toHaveBeenCalledTimes(1);
    expect(exit).toHaveBeenCalledExactlyOnceWith(1);
    expect(lines.at(-1)).toMatchObject({ level: 'warn', msg: 'second signal during shutdown, exiting now' });
    release();
    await vi.advanceTimersByTimeAsync(20_000);
    proc.emit('SIGTERM');
    expect(exit).toHaveBeenCalledTimes(1);
  });

  it('exits 1 when shutdown rejects or throws synchronously', async () => {
    const a = setup();
    installShutdown({
      logger: a.logger,
      drainTimeoutMs: 1_000,
      shutdown: async () => {
        throw new Error('drain failed');
      },
      exit: a.exit,
      process: a.proc,
    });
    a.proc.emit('SIGTERM');
    await vi.advanceTimersByTimeAsync(0);
    expect(a.exit).toHaveBeenCalledExactlyOnceWith(1);
    expect(a.lines.at(-1)).toMatchObject({ level: 'error', msg: 'shutdown failed' });

    const b = setup();
    installShutdown({
      logger: b.logger,
      drainTimeoutMs: 1_000,
      shutdown: () => {
        throw new Error('sync');
      },
      exit: b.exit,
      process: b.proc,
    });
    b.proc.emit('SIGTERM');
    await vi.advanceTimersByTimeAsync(0);
    expect(b.exit).toHaveBeenCalledExactlyOnceWith(1);
  });

  it('listens to the configured signals only and can be uninstalled', async () => {
    const { logger, proc, exit } = setup();
    const shutdown = vi.fn(async () => {});
    const uninstall = installShutdown({
      logger,
      signals: ['SIGHUP'],
      drainTimeoutMs: 1_000,
      shutdown,
      exit,
      process: proc,
    });
    expect(proc.listenerCount('SIGHUP')).toBe(1);
    expect(proc.listenerCount('SIGTERM')).toBe(0);
    uninstall();
    expect(proc.listenerCount('SIGHUP')).toBe(0);
    proc.emit('SIGHUP');
    expect(shutdown).not.toHaveBeenCalled();
  });

  it('installs on the real process by default and uninstalls cleanly', () => {
    const { logger } = setup();
    const before = process.listenerCount('SIGTERM');
    const uninstall = installShutdown({ logger, drainTimeoutMs: 1, shutdown: async () => {} });
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    expect(process.listenerCount('SIGINT')).toBeGreaterThan(0);
    uninstall();
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
