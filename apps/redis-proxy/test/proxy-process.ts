import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtAppMain, freePort } from '@pullplane/testing';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const main = path.join(root, 'apps/redis-proxy/dist/main.js');

export interface ProxyProcess {
  port: number;
  metricsPort: number;
  child: ChildProcess;
  logs: string[];
  /** Resident and peak resident memory of the proxy process, in bytes, from /proc. */
  memory(): { rss: number; peak: number };
  /** Starts a new peak measurement (VmHWM := VmRSS). */
  resetPeak(): void;
  /** One sample's value from /metrics (0 when the series does not exist yet). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The built redis-proxy app in a process of its own, so memory read from /proc is the
 * proxy's and nothing of the test's. Ready when it logs "redis proxy listening".
 */
export async function spawnProxy(flags: string[], env: Record<string, string> = {}): Promise<ProxyProcess> {
  builtAppMain('redis-proxy');
  const port = await freePort();
  const metricsPort = await freePort();
  const child = spawn(
    process.execPath,
    [
      main,
      '--listen-host=127.0.0.1',
      `--listen-port=${port}`,
      `--metrics-port=${metricsPort}`,
      '--healthz-port=0',
      '--gateway-plaintext',
      ...flags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        logs.push(line);
        if (line.includes('"redis proxy listening"')) resolve();
      }
    });
    child.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
    void exited.then((code) => reject(new Error(`redis proxy exited (${code}):\n${logs.join('\n')}`)));
    setTimeout(() => reject(new Error(`redis proxy not ready in 20 s:\n${logs.join('\n')}`)), 20_000).unref();
  });
  const status = () => readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kb = (text: string, field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)![1]) * 1024;
  return {
    port,
    metricsPort,
    child,
    logs,
    memory() {
      const s = status();
      return { rss: kb(s, 'VmRSS'), peak: kb(s, 'VmHWM') };
    },
    resetPeak() {
      writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
    },
    async metric(name, labels = {}) {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
      for (const line of text.split('\n')) {
        if (!line.startsWith(name)) continue;
        const [series, value] = line.split(' ') as [string, string];
        const labelText = series.slice(name.length);
        if (labelText !== '' && !labelText.startsWith('{')) continue;
        if (want.every((w) => labelText.includes(w))) return Number(value);
      }
      return 0;
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Bytes the kernel holds for the proxy that it has not read yet, on its side of the connection
 * from `clientPort` (the rx_queue column of /proc/net/tcp): 0 means the proxy has read all that
 * was sent, whatever it did with it.
 */
export function unreadByProxy(proxyPort: number, clientPort: number): number {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
  const local = `0100007F:${hex(proxyPort)}`;
  const remote = `0100007F:${hex(clientPort)}`;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local && f[2] === remote) return Number.parseInt(f[4]!.split(':')[1]!, 16);
  }
  throw new Error(`no connection 127.0.0.1:${clientPort} -> :${proxyPort} in /proc/net/tcp`);
}

/** A raw connection that records everything the proxy answers and when it closes. */
export interface RawConnection {
  socket: Socket;
  received(): string;
  /** Resolves once the proxy has closed the connection. */
  closed: Promise<void>;
  /** Resolves once `text` has arrived (rejects if the connection closes first). */
  receivedText(text: string): Promise<void>;
}

export function rawConnection(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let waiters: Array<() => void> = [];
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      const w = waiters;
      waiters = [];
      for (const wake of w) wake();
    });
    const received = () => Buffer.concat(chunks).toString('latin1');
    socket.once('connect', () =>
      resolve({
        socket,
        received,
        closed,
        async receivedText(text) {
          while (!received().includes(text)) {
            const more = new Promise<void>((r) => waiters.push(r));
            const gone = closed.then(() => {
              if (!received().includes(text))
                throw new Error(`closed before ${JSON.stringify(text)}: ${received()}`);
            });
            await Promise.race([more, gone]);
          }
        },
      }),
    );
    socket.once('error', reject);
  });
}
