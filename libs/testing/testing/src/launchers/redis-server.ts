import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { freePort } from './free-port.js';
import {
  findBinary,
  makeTempDir,
  recreateTempDir,
  removeTempDir,
  spawnTracked,
  type TrackedProcess,
  terminate,
  waitUntilReady,
} from './processes.js';

export interface RedisServerOptions {
  /** Sets `requirepass`. */
  password?: string;
  /** TCP port; a free one is picked when omitted (`--port 0` would disable TCP). */
  port?: number;
  /**
   * Serve TLS only (`--tls-port`, plain TCP off), as Argo CD's argocd-redis with TLS; `ca`
   * verifies the server in the readiness check. Clients need no certificate.
   */
  tls?: { cert: string; key: string; ca: string };
  /** Extra command-line arguments, appended last. */
  args?: string[];
  startTimeoutMs?: number;
}

export interface RedisServerHandle {
  readonly host: string;
  readonly port: number;
  readonly password: string | undefined;
  /** `redis://[:password@]127.0.0.1:<port>` */
  readonly url: string;
  /** Its working directory (TLS files): removed by stop(), made again by restart(). */
  readonly dir: string;
  stop(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts again on the same port (data is not persisted). */
  restart(): Promise<void>;
  isRunning(): boolean;
}

const INSTALL_HINT = 'apt-get install redis-server';

function encodeCommand(...parts: string[]): string {
  return `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`;
}

/** Sends [AUTH] PING over a raw socket; true once the server answers +PONG. */
function ping(host: string, port: number, password?: string, ca?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = ca ? tlsConnect({ host, port, ca, servername: 'localhost' }) : connect({ host, port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on(ca ? 'secureConnect' : 'connect', () => {
      socket.write((password ? encodeCommand('AUTH', password) : '') + encodeCommand('PING'));
    });
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('+PONG')) done(true);
      // -LOADING and friends: not ready yet; -WRONGPASS: a real error, but keep it visible via timeout output
      else if (reply.startsWith('-') && reply.includes('\r\n')) done(false);
    });
  });
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServerHandle> {
  const binary = findBinary('redis-server', INSTALL_HINT);
  const host = '127.0.0.1';
  const port = options.port ?? (await freePort(host));
  const dir = makeTempDir('redis-');
  const timeoutMs = options.startTimeoutMs ?? 15_000;
  let proc: TrackedProcess | undefined;

  const launch = async () => {
    recreateTempDir(dir);
    const args = options.tls
      ? ['--port', '0', '--tls-port', String(port), ...tlsArgs(dir, options.tls)]
      : ['--port', String(port)];
    args.push('--bind', host, '--save', '', '--appendonly', 'no', '--dir', dir);
    args.push('--daemonize', 'no', '--protected-mode', 'no');
    if (options.password !== undefined) args.push('--requirepass', options.password);
    args.push(...(options.args ?? []));
    const started = spawnTracked(binary, args, dir);
    proc = started;
    await waitUntilReady(
      started,
      `redis-server on port ${port}`,
      () => ping(host, port, options.password, options.tls?.ca),
      timeoutMs,
    );
  };
  await launch();

  const auth = options.password !== undefined ? `:${encodeURIComponent(options.password)}@` : '';
  return {
    host,
    port,
    password: options.password,
    url: `redis://${auth}${host}:${port}`,
    dir,
    async stop() {
      if (proc) await terminate(proc, 'SIGTERM');
      // Nothing in it outlives the server (nothing is persisted): a suite's servers leave no
      // directories behind even where its worker never runs exit hooks.
      removeTempDir(dir);
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (proc) await terminate(proc, signal, 2000);
    },
    async restart() {
      if (proc) await terminate(proc, 'SIGTERM');
      await launch();
    },
    isRunning: () => proc?.isRunning() ?? false,
  };
}

function tlsArgs(dir: string, tls: { cert: string; key: string; ca: string }): string[] {
  const file = (name: string, body: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  return [
    '--tls-cert-file',
    file('tls.crt', tls.cert),
    '--tls-key-file',
    file('tls.key', tls.key),
    '--tls-ca-cert-file',
    file('ca.crt', tls.ca),
    '--tls-auth-clients',
    'no',
  ];
}
