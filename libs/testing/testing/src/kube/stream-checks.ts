import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { findBinary } from '../launchers/processes.js';
import { type KubectlOptions, kubectlInvocation } from './kubectl.js';
import { patternByte } from './streams/pod-http-server.js';

/**
 * What tests of exec, attach and port-forward check with, whether kubectl talks to the
 * stand-in directly or through the resource proxy: a GET and a pattern-checked download through
 * a forwarded port, kubectl on a pseudo-terminal, and the bytes this process holds.
 */

const PATTERN = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => patternByte(i)));

/** A GET to a port on this host (a forwarded one); the whole body. */
export function httpGet(port: number, path: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Downloads a pod's `/bytes/<n>`, checking each byte against the pattern as it arrives (nothing kept). */
export function downloadPattern(port: number, n: number): Promise<{ bytes: number; mismatches: number }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: `/bytes/${n}`, agent: false }, (res) => {
      let bytes = 0;
      let mismatches = 0;
      res.on('data', (c: Buffer) => {
        for (let off = 0; off < c.length; ) {
          const at = (bytes + off) % PATTERN.length;
          const len = Math.min(c.length - off, PATTERN.length - at);
          if (!c.subarray(off, off + len).equals(PATTERN.subarray(at, at + len))) mismatches++;
          off += len;
        }
        bytes += c.length;
      });
      res.on('end', () => resolve({ bytes, mismatches }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface TerminalKubectl {
  /** Keystrokes to the terminal. */
  type(keys: string): void;
  /** Everything the terminal showed so far. */
  shown(): string;
  exited: Promise<number | null>;
  kill(): void;
  readonly child: ChildProcess;
}

/**
 * kubectl on a pseudo-terminal of 111 columns and 22 rows (util-linux `script`), so `exec -it`
 * and `attach -it` send the real client's terminal size and keystrokes.
 */
export function kubectlOnTerminal(args: string[], opts: KubectlOptions): TerminalKubectl {
  const inv = kubectlInvocation(args, opts);
  const script = findBinary('script', 'install util-linux (it provides script)');
  const command = `stty cols 111 rows 22; exec ${[inv.binary, ...inv.args].map(quote).join(' ')}`;
  const child = spawn(script, ['-qfec', command, '/dev/null'], {
    env: inv.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let shown = '';
  child.stdout.on('data', (c: Buffer) => {
    shown += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    type: (keys: string) => void child.stdin.write(keys),
    shown: () => shown,
    exited,
    kill: () => void child.kill('SIGKILL'),
    child,
  };
}

let gc: (() => void) | undefined;

/** Heap and buffers this process holds after a full collection: what it keeps, not its garbage. */
export function liveBytes(): number {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}
