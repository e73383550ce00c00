import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createMemoryBus } from '@pullplane/bus';
import { ConfigError, loadConfig } from '@pullplane/config';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { createRedisProxy, validateRedisProxyConfig } from '@pullplane/redis-proxy';
import { AgentRouter } from '@pullplane/router';
import { createTestPki, type RedisServerHandle, startRedisServer } from '@pullplane/testing';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisProxyOptions } from '../src/options.js';

const base = ['--gateway-plaintext', '--redis-server-address=127.0.0.1:6379', '--nats-insecure'];
const load = (argv: string[], env: Record<string, string> = {}, paramsFile?: string) =>
  loadConfig(redisProxyOptions, {
    argv: [...base, ...argv],
    env,
    ...(paramsFile ? { paramsFile } : {}),
    validate: (c) => validateRedisProxyConfig(c, env),
  }).config;
const problems = (argv: string[]) => {
  try {
    load(argv);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => p.message);
  }
};

describe('limit and allow-list settings', () => {
  it('default to the safe values', () => {
    const c = load([]);
    expect(c).toMatchObject({
      allowCommands: [],
      maxUnauthenticatedArgs: 10,
      maxUnauthenticatedBytes: 16384,
      unauthenticatedTimeout: 10_000,
      maxCommandArgs: 16384,
      maxBulkLength: 64 * 1024 * 1024,
      maxCommandBytes: 65 * 1024 * 1024,
      maxClientInputBytes: 128 * 1024 * 1024,
      maxClientOutputBytes: 128 * 1024 * 1024,
      maxBufferedBytes: 256 * 1024 * 1024,
    });
  });

  it('are read from flags, env and params keys', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'redis-proxy-config-'));
    const params = path.join(dir, 'params.yaml');
    writeFileSync(
      params,
      'principal.redis-proxy.allow-commands: "multi,exec,client|list"\nprincipal.redis-proxy.max-buffered-bytes: "1073741824"\n',
    );
    const c = load(
      ['--max-command-args=100'],
      { ARGOCD_PRINCIPAL_REDIS_PROXY_MAX_UNAUTHENTICATED_BYTES: '4096' },
      params,
    );
    expect([c.maxCommandArgs, c.maxUnauthenticatedBytes, c.maxBufferedBytes, c.allowCommands]).toEqual([
      100,
      4096,
      1073741824,
      ['multi', 'exec', 'client|list'],
    ]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuse commands that cannot be relayed, malformed names and limits that contradict each other', () => {
    expect(problems(['--allow-commands=monitor,client|tracking,bad name,flushall'])).toEqual([
      "--allow-commands: 'monitor' cannot be relayed through the redis proxy",
      "--allow-commands: 'client|tracking' cannot be relayed through the redis proxy",
      "--allow-commands: 'bad name' is not a command name (name or name|subcommand)",
    ]);
    expect(problems(['--max-bulk-length=4096', '--max-command-bytes=2048'])).toEqual([
      '--max-bulk-length exceeds --max-command-bytes',
    ]);
    expect(problems(['--max-command-bytes=300000000'])).toEqual([
      '--max-command-bytes exceeds --max-client-input-bytes',
      '--max-command-bytes exceeds --max-buffered-bytes',
    ]);
    // go-redis' HELLO 3 AUTH … SETNAME … must always fit.
    expect(problems(['--max-unauthenticated-args=6'])[0]).toMatch(/at least 7/);
  });
});

describe('the listener', () => {
  let principal: RedisServerHandle;
  let router: AgentRouter;
  beforeAll(async () => {
    principal = await startRedisServer();
    router = new AgentRouter({
      bus: createMemoryBus(),
      logger: pino({ level: 'silent' }),
      credentials: tunnelCredentials.insecure(),
    });
    await router.start();
  }, 30_000);
  afterAll(async () => {
    router?.stop();
    await principal?.stop();
  });

  /** Starts a proxy and returns the messages it logged up to and including "redis proxy listening". */
  async function startupLog(
    host: string,
    extra: { password?: string; tls?: boolean } = {},
  ): Promise<string[]> {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l).msg as string);
        cb();
      },
    });
    const pki = extra.tls ? await createTestPki() : undefined;
    const cert = pki ? await pki.serverCert() : undefined;
    const proxy = createRedisProxy({
      router,
      logger: pino({ level: 'info' }, sink),
      registry: new Registry(),
      host,
      port: 0,
      principal: { host: principal.host, port: principal.port },
      ...(extra.password ? { password: extra.password } : {}),
      ...(cert ? { tls: { cert: cert.certPem, key: cert.keyPem } } : {}),
    });
    await proxy.listen();
    // The warning comes right after "listening", in the same turn, or not at all.
    const logged = [...lines];
    await proxy.close();
    return logged;
  }

  const warning =
    'redis proxy listens beyond loopback without a password and without TLS: anyone who reaches this port can use the principal Redis; set --redis-password (and --tls-cert-path/--tls-key-path), or --listen-host=127.0.0.1 behind a mesh sidecar';

  it('warns at startup when it listens beyond loopback with neither a password nor TLS', async () => {
    expect(await startupLog('0.0.0.0')).toEqual(['redis proxy listening', warning]);
  });

  it('says nothing more on loopback, with a password, or with TLS', async () => {
    for (const [host, extra] of [
      ['127.0.0.1', {}],
      ['0.0.0.0', { password: 'pw' }],
      ['0.0.0.0', { tls: true }],
    ] as const) {
      expect(await startupLog(host, extra), `${host} ${JSON.stringify(extra)}`).toEqual([
        'redis proxy listening',
      ]);
    }
  });
});
