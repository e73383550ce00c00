import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { findBinary, makeTempDir } from '../launchers/processes.js';

export interface KubectlOptions {
  kubeconfig: string;
  /** Kill after this long (default 20 s). */
  timeoutMs?: number | undefined;
  /**
   * Written to stdin (e.g. a manifest for `apply -f -`). runKubectl then closes stdin; spawnKubectl
   * leaves it open, so a test can go on typing through `child.stdin` (attach, exec -i).
   */
  input?: string | undefined;
  /** Discovery cache directory; defaults to one fresh directory per test process. */
  cacheDir?: string | undefined;
  /** Extra environment, e.g. `KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false'` to force SPDY. */
  env?: Record<string, string> | undefined;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

let sharedCacheDir: string | undefined;

function baseArgs(opts: KubectlOptions): string[] {
  sharedCacheDir ??= makeTempDir('kubectl-cache-');
  return ['--kubeconfig', opts.kubeconfig, '--cache-dir', opts.cacheDir ?? sharedCacheDir];
}

/** The child environment: no ambient KUBECONFIG and a throwaway HOME, so the user's config never leaks in. */
function env(opts: KubectlOptions): NodeJS.ProcessEnv {
  const { KUBECONFIG: _kubeconfig, ...rest } = process.env;
  sharedCacheDir ??= makeTempDir('kubectl-cache-');
  return { ...rest, ...opts.env, HOME: sharedCacheDir };
}

/** How runKubectl starts kubectl, for callers that wire its standard streams themselves. */
export function kubectlInvocation(
  args: string[],
  opts: KubectlOptions,
): { binary: string; args: string[]; env: NodeJS.ProcessEnv } {
  const binary = findBinary('kubectl', 'install kubectl (https://kubernetes.io/docs/tasks/tools/)');
  return { binary, args: [...baseArgs(opts), ...args], env: env(opts) };
}

/** Runs the real kubectl to completion; never rejects on a non-zero exit (check `code`). */
export function runKubectl(args: string[], opts: KubectlOptions): Promise<KubectlResult> {
  const binary = findBinary('kubectl', 'install kubectl (https://kubernetes.io/docs/tasks/tools/)');
  return new Promise((resolve, reject) => {
    const child = execFile(
      binary,
      [...baseArgs(opts), ...args],
      { timeout: opts.timeoutMs ?? 20_000, env: env(opts), maxBuffer: 32 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          if (err.killed) reject(new Error(`kubectl ${args.join(' ')} timed out\n${stderr}`));
          else reject(err);
          return;
        }
        resolve({ code: typeof err?.code === 'number' ? err.code : 0, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

export interface KubectlStream {
  readonly child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout contains `text` (or matches the regexp); rejects after timeoutMs. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<string>;
  /** Kills the process and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts a long-running kubectl (`get -w`, `logs -f`) whose output tests read while it runs. */
export function spawnKubectl(args: string[], opts: KubectlOptions): KubectlStream {
  const binary = findBinary('kubectl', 'install kubectl (https://kubernetes.io/docs/tasks/tools/)');
  const child = spawn(binary, [...baseArgs(opts), ...args], {
    env: env(opts),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (opts.input !== undefined) child.stdin.write(opts.input);
  else child.stdin.end();
  let out = '';
  let err = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    for (const w of waiters) w();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killTimer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  killTimer.unref();
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitFor(text, timeoutMs = 10_000) {
      const found = () => (typeof text === 'string' ? out.includes(text) : text.test(out));
      if (found()) return Promise.resolve(out);
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!found()) return;
          cleanup();
          resolve(out);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `kubectl ${args.join(' ')}: "${String(text)}" not seen within ${timeoutMs} ms\nstdout:\n${out}\nstderr:\n${err}`,
            ),
          );
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    async stop() {
      clearTimeout(killTimer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
