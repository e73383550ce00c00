import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

// Every process and temporary directory we create is remembered here so that an
// aborted test run (thrown error, forgotten stop()) never leaves servers behind.
const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: signals and rmSync are.
  process.on('exit', () => {
    for (const child of children) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of tempDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
  });
}

/** A temporary directory removed when the test process exits. */
export function makeTempDir(prefix: string): string {
  installExitHook();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/** Resolves a binary on PATH, or throws the install hint callers want to see. */
export function findBinary(name: string, installHint: string, pathEnv = process.env.PATH ?? ''): string {
  for (const dir of pathEnv.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  throw new Error(`${name} not found on PATH: ${installHint}`);
}

export interface TrackedProcess {
  readonly child: ChildProcess;
  /** Last lines of stdout+stderr, for error messages when startup fails. */
  output(): string;
  /** Resolves with the exit code/signal once the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isRunning(): boolean;
}

export function spawnTracked(
  binary: string,
  args: string[],
  cwd?: string,
  /** Added to this process's environment. */
  env?: Record<string, string>,
): TrackedProcess {
  installExitHook();
  const child = spawn(binary, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
    ...(env ? { env: { ...process.env, ...env } } : {}),
  });
  children.add(child);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-8192);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      children.delete(child);
      resolve({ code, signal });
    });
    child.once('error', () => {
      running = false;
      children.delete(child);
      resolve({ code: null, signal: null });
    });
  });
  return { child, output: () => tail, exited, isRunning: () => running };
}

/** Sends a signal and waits for exit; escalates to SIGKILL after graceMs. */
export async function terminate(proc: TrackedProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000) {
  if (!proc.isRunning()) return;
  proc.child.kill(signal);
  const timer = setTimeout(() => {
    if (proc.isRunning()) proc.child.kill('SIGKILL');
  }, graceMs);
  try {
    await proc.exited;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Polls `probe` until it resolves true. Fails early with the process output if the
 * process dies, so "port in use" or config errors surface instead of a timeout.
 */
export async function waitUntilReady(
  proc: TrackedProcess,
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!proc.isRunning()) {
      throw new Error(`${what} exited during startup:\n${proc.output()}`);
    }
    try {
      if (await probe()) return;
    } catch {
      // not ready yet
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  proc.child.kill('SIGKILL');
  throw new Error(`${what} did not become ready within ${timeoutMs} ms:\n${proc.output()}`);
}

/** Removes a directory created with makeTempDir before the process exits. */
export function removeTempDir(dir: string): void {
  if (!tempDirs.delete(dir)) return;
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Kills whatever this test process started and is still running (a test that stopped its
 * servers leaves nothing) and removes every temporary directory it made. The test setup runs it
 * after each file's own teardown: the 'exit' hook alone left directories behind, as test
 * workers are not always ended by a normal exit.
 */
export async function releaseTestResources(): Promise<void> {
  const running = [...children];
  const exits = running.map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  );
  await Promise.all(exits);
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** Makes a makeTempDir directory exist again after removeTempDir (a server started again), tracked as before. */
export function recreateTempDir(dir: string): void {
  installExitHook();
  mkdirSync(dir, { recursive: true });
  tempDirs.add(dir);
}

export function trackedProcessCount(): number {
  return children.size;
}
