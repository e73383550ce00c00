import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeCommand, RespDecoder, type RespError, type RespValue } from '../src/index.js';
import { randomSplit } from './split-harness.js';

/** `--port 0` disables TCP in redis-server, so find a free port by binding one ourselves. */
async function freePort(): Promise<number> {
  const srv = net.createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const { port } = srv.address() as net.AddressInfo;
  srv.close();
  await once(srv, 'close');
  return port;
}

export interface RedisServer {
  port: number;
  stop(): Promise<void>;
}

export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'resp-redis-'));
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    // Enabling DEBUG lets the tests fetch one reply of every RESP3 type from the server itself.
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    args.push('--dir', dir, '--enable-debug-command', 'yes');
    const proc: ChildProcess = spawn('redis-server', args, { stdio: 'ignore' });
    const ready = await waitForPort(port, proc);
    if (ready) {
      return {
        port,
        async stop() {
          if (proc.exitCode === null) {
            proc.kill('SIGTERM');
            await once(proc, 'exit');
          }
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    proc.kill('SIGKILL');
    // Another process may have taken the port between our probe and redis binding it.
    if (attempt >= 3) throw new Error('redis-server did not start');
  }
}

async function waitForPort(port: number, proc: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && proc.exitCode === null) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 25)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
  return false;
}

/** A raw socket speaking RESP through our codec; replies can be re-chunked at random. */
export class RawConnection {
  readonly error: RespError[] = [];
  private readonly values: RespValue[] = [];
  private readonly raw: Buffer[] = [];
  private wake: (() => void) | undefined;
  private closed = false;
  private readonly decoder: RespDecoder;

  private constructor(
    private readonly socket: net.Socket,
    rechunk: (() => number) | undefined,
  ) {
    this.decoder = new RespDecoder({
      onValue: (v) => {
        this.values.push(v);
        this.wake?.();
      },
      onError: (e) => {
        this.error.push(e);
        this.wake?.();
      },
    });
    socket.on('data', (data: Buffer) => {
      this.raw.push(data);
      for (const piece of rechunk ? randomSplit(data, rechunk, 97) : [data]) this.decoder.push(piece);
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake?.();
    });
    socket.on('error', () => undefined);
  }

  static async open(port: number, rechunk?: () => number): Promise<RawConnection> {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.setNoDelay(true);
    return new RawConnection(socket, rechunk);
  }

  write(data: Buffer | string): void {
    this.socket.write(data);
  }

  async next(timeoutMs = 5000): Promise<RespValue> {
    const deadline = Date.now() + timeoutMs;
    while (this.values.length === 0) {
      if (this.error.length > 0) throw this.error[0];
      if (this.closed) throw new Error('connection closed');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a reply');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left); // wait-ok: the deadline itself; woken early by the reply
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.values.shift()!;
  }

  async call(...args: Array<string | Buffer>): Promise<RespValue> {
    this.write(encodeCommand(args));
    return this.next();
  }

  /** Raw bytes received since the last call. */
  takeRaw(): Buffer {
    const all = Buffer.concat(this.raw);
    this.raw.length = 0;
    return all;
  }

  /** Resolves with everything received once the server closes the connection. */
  async untilClosed(timeoutMs = 5000): Promise<Buffer> {
    if (!this.closed) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          once(this.socket, 'close'),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('server did not close')), timeoutMs);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    }
    return this.takeRaw();
  }

  close(): void {
    this.socket.destroy();
  }
}
