import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, freePorts } from './free-port.js';
import {
  findBinary,
  makeTempDir,
  spawnTracked,
  type TrackedProcess,
  terminate,
  waitUntilReady,
} from './processes.js';

export interface NatsServerOptions {
  /** Enable JetStream (default true). */
  jetstream?: boolean;
  /** Client port; a free one is picked when omitted. */
  port?: number;
  /** JetStream store directory; a temporary one (removed at exit) when omitted. */
  storeDir?: string;
  /** Extra command-line arguments, appended last. */
  args?: string[];
  /**
   * A server configuration file's text (users, permissions, TLS…), loaded with `--config`;
   * `include` paths resolve against `configDir`. Port, monitor port and JetStream come from
   * the command line and win over the file.
   */
  config?: string;
  /** Where the config file is written (default: a temporary directory). */
  configDir?: string;
  /** Environment of the server: the values of `$VARIABLE`s the config leaves to the environment. */
  env?: Record<string, string>;
  /** Startup timeout (default 15 s). */
  startTimeoutMs?: number;
}

export interface NatsServerHandle {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** HTTP monitoring port (`/varz`, `/jsz`, `/healthz`). */
  readonly monitorPort: number;
  /** Graceful stop (SIGTERM, escalates to SIGKILL). The handle can be restart()ed afterwards. */
  stop(): Promise<void>;
  /** Sends a signal (default SIGKILL, simulating a crash) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and store directory (stopping it first if running). */
  restart(): Promise<void>;
  isRunning(): boolean;
}

const INSTALL_HINT = 'apt-get install nats-server';

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const binary = findBinary('nats-server', INSTALL_HINT);
  const jetstream = options.jetstream ?? true;
  // Asked for together, so the client and monitor ports are never the same one twice.
  const [free, freeMonitor] = await freePorts(2);
  const port = options.port ?? free!;
  let monitorPort = freeMonitor! === port ? free! : freeMonitor!;
  const storeDir = options.storeDir ?? makeTempDir('nats-js-');
  const timeoutMs = options.startTimeoutMs ?? 15_000;
  let proc: TrackedProcess | undefined;
  let configFile: string | undefined;
  if (options.config !== undefined) {
    configFile = join(options.configDir ?? makeTempDir('nats-conf-'), 'nats-server.conf');
    writeFileSync(configFile, options.config);
  }

  const launch = async () => {
    const args = configFile ? ['--config', configFile] : [];
    args.push('-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort));
    if (jetstream) args.push('-js', '-sd', storeDir);
    args.push(...(options.args ?? []));
    const started = spawnTracked(binary, args, undefined, options.env);
    proc = started;
    // /healthz reports ok only once JetStream (when enabled) has finished recovering
    // its store, which matters after restart() with existing streams.
    const query = jetstream ? '?js-enabled-only=true' : '';
    await waitUntilReady(
      started,
      `nats-server on port ${port}`,
      async () => {
        const res = await fetch(`http://127.0.0.1:${monitorPort}/healthz${query}`);
        await res.text();
        return res.ok;
      },
      timeoutMs,
    );
  };

  await launch();

  const handle: NatsServerHandle = {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    get monitorPort() {
      return monitorPort;
    },
    async stop() {
      if (proc) await terminate(proc, 'SIGTERM');
    },
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (proc) await terminate(proc, signal, 2000);
    },
    async restart() {
      if (proc) await terminate(proc, 'SIGTERM');
      try {
        await launch();
      } catch (err) {
        // The monitor port is ours only by convention; if something grabbed it while
        // the server was down, pick another rather than failing the test.
        monitorPort = await freePort();
        await launch().catch(() => {
          throw err;
        });
      }
    },
    isRunning: () => proc?.isRunning() ?? false,
  };
  return handle;
}
