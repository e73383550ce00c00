import { type ChildProcess, spawn } from 'node:child_process';
import { builtAppMain } from './built-app.js';

/** A built app (`apps/<app>/dist/main.js`) running as a process of its own, and its JSON log lines. */
export interface AppProcess {
  readonly child: ChildProcess;
  /** Raw output lines (stdout and stderr). */
  readonly logs: string[];
  readonly exited: Promise<number | null>;
  /** Parsed JSON log lines so far. */
  lines(): Array<Record<string, unknown>>;
  /** The first log line matching, waiting for it; fails when the process exits or time runs out. */
  waitForLine(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * Starts a built app with exactly the given env (plus PATH and HOME), so the tests decide what
 * the app sees, as a Deployment's env would. `nodeOptions` go before the app's main, as its
 * start command gives them (the soak runs the apps as their images do).
 */
export function spawnAppProcess(
  app: string,
  args: readonly string[],
  env: Record<string, string> = {},
  nodeOptions: readonly string[] = [],
): AppProcess {
  const main = builtAppMain(app);
  const child = spawn(process.execPath, [...nodeOptions, main, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
  });
  const logs: string[] = [];
  const waiters: Array<() => void> = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      logs.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    wake();
  });
  child.stderr!.on('data', (d: Buffer) => {
    logs.push(...d.toString().split('\n').filter(Boolean));
    wake();
  });
  // 'close' rather than 'exit': by then every line the process wrote has been read.
  const exited = new Promise<number | null>((resolve) =>
    child.once('close', (code) => {
      wake();
      resolve(code);
    }),
  );
  const lines = () =>
    logs.flatMap((l) => {
      try {
        const v = JSON.parse(l) as unknown;
        return typeof v === 'object' && v !== null ? [v as Record<string, unknown>] : [];
      } catch {
        return [];
      }
    });
  return {
    child,
    logs,
    exited,
    lines,
    async waitForLine(match, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = lines().find(match);
        if (found) return found;
        if (Date.now() > deadline || child.exitCode !== null || child.signalCode !== null)
          throw new Error(`no matching log line from ${app}:\n${logs.join('\n')}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200).unref();
        });
      }
    },
    async stop(graceMs = 5_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}
