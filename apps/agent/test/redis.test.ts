import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type AgentService, createAgentService, ownName, validateAgentConfig } from '@pullplane/agent-core';
import { parseAuthMethod } from '@pullplane/auth';
import { createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { agentAuthenticator, Gateway } from '@pullplane/gateway';
import { createTestPki, type RedisServerHandle, startRedisServer } from '@pullplane/testing';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentOptions } from '../src/options.js';

const logger = pino({ level: 'silent' });
let dir: string;
const write = (name: string, body: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, body);
  return p;
};

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-redis-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('agent redis flags', () => {
  const load = (argv: string[], env: Record<string, string> = {}) =>
    loadConfig(agentOptions, { argv: ['--server-address=gw', '--creds=header:', ...argv], env }).config;

  it("defaults to Argo CD's argocd-redis and takes env, params and flags like argocd-agent", () => {
    expect(load([]).redisAddr).toEqual({ host: 'argocd-redis', port: 6379 });
    expect(load([], { ARGOCD_AGENT_REDIS_ADDRESS: 'redis.argocd:6380', REDIS_PASSWORD: 'pw' })).toMatchObject(
      {
        redisAddr: { host: 'redis.argocd', port: 6380 },
        redisPassword: 'pw',
      },
    );
    const params = write(
      'params.yaml',
      'agent.redis.address: "other:7000"\nagent.redis.tls.enabled: "true"\n',
    );
    expect(load([`--params-file=${params}`])).toMatchObject({
      redisAddr: { host: 'other', port: 7000 },
      redisTls: true,
    });
    expect(load(['--redis-addr=r', `--params-file=${params}`]).redisAddr).toEqual({ host: 'r', port: 6379 });
    // argocd-agent's params ship agent.redis.tls.ca-path whether or not TLS is on: the path is
    // only used (and must only exist) with --redis-tls.
    const off = load(['--redis-ca-path=/app/config/redis-tls/ca.crt']);
    expect(validateAgentConfig(off).filter((p) => p.includes('redis'))).toEqual([]);
    const on = load(['--redis-tls', '--redis-ca-path=/app/config/redis-tls/ca.crt']);
    expect(validateAgentConfig(on)).toContain(
      '--redis-ca-path: "/app/config/redis-tls/ca.crt" does not exist (needed by --redis-tls)',
    );
  });

  it('knows its own name from --agent-name or its client certificate', async () => {
    const pki = await createTestPki();
    const cert = await pki.agentCert('east');
    const certPath = write('east.crt', cert.certPem);
    const keyPath = write('east.key', cert.keyPem);
    expect(ownName(load([`--tls-client-cert=${certPath}`, `--tls-client-key=${keyPath}`]))).toBe('east');
    expect(
      ownName(load(['--agent-name=west', `--tls-client-cert=${certPath}`, `--tls-client-key=${keyPath}`])),
    ).toBe('west');
    expect(ownName(load([]))).toBeUndefined();
  });
});

describe('agent app serving redis streams', () => {
  let redis: RedisServerHandle;
  let gateway: Gateway;
  let app: AgentService;

  beforeAll(async () => {
    redis = await startRedisServer({ password: 'agent-pw' });
    const pki = await createTestPki();
    const server = await pki.serverCert();
    gateway = new Gateway({
      bus: createMemoryBus(),
      logger,
      registry: new Registry(),
      agentListener: {
        host: '127.0.0.1',
        port: 0,
        tls: { cert: server.certPem, key: server.keyPem, ca: pki.ca.certPem, requireClientCert: true },
      },
      advertiseHost: '127.0.0.1',
      authenticateAgent: agentAuthenticator(parseAuthMethod('mtls')),
      authenticateInternal: () => ({ ok: false, code: 'NO', reason: 'none' }),
      maxChunkSize: 64 * 1024,
      initialWindow: 256 * 1024,
      drainTimeoutMs: 500,
      presenceRefreshMs: 30_000,
    });
    await gateway.start();
    const cert = await pki.agentCert('east');
    const { config } = loadConfig(agentOptions, {
      argv: [
        '--server-address=127.0.0.1',
        `--server-port=${gateway.agentPort}`,
        `--tls-client-cert=${write('c.crt', cert.certPem)}`,
        `--tls-client-key=${write('c.key', cert.keyPem)}`,
        `--root-ca-path=${write('ca.crt', pki.ca.certPem)}`,
        `--redis-addr=127.0.0.1:${redis.port}`,
        '--enable-resource-proxy=false',
        '--metrics-port=0',
        '--healthz-port=0',
      ],
      env: { REDIS_PASSWORD: 'agent-pw' },
      validate: (c) => validateAgentConfig(c, { REDIS_PASSWORD: 'agent-pw' }),
    });
    app = createAgentService(config, { logger, registry: new Registry() });
    await app.start();
    const deadline = Date.now() + 10_000;
    while (gateway.session('east') === undefined) {
      if (Date.now() > deadline) throw new Error('the agent never connected');
      await new Promise((r) => setTimeout(r, 20)); // wait-ok: poll interval of a loop that waits for the event under a deadline
    }
  }, 30_000);

  afterAll(async () => {
    await app?.stop();
    await gateway?.stop();
    await redis?.stop();
  });

  it('answers GET and SET on its Redis with its name cut out of the key', async () => {
    const direct = new Redis({ host: redis.host, port: redis.port, password: 'agent-pw' });
    await direct.set('app|resources-tree|guestbook|1.8.3.gz', 'tree');
    const ask = async (...args: string[]) => {
      const s = gateway.openLocal('east', {
        head: { case: 'redis', value: { args: args.map((a) => Buffer.from(a)), respVersion: 2 } },
      });
      const chunks: Buffer[] = [];
      s.on('data', (c: Buffer) => chunks.push(c));
      await new Promise((r) => s.on('end', r));
      return Buffer.concat(chunks).toString();
    };
    expect(await ask('GET', 'app|resources-tree|east_guestbook|1.8.3.gz')).toBe('$4\r\ntree\r\n');
    expect(await ask('GET', 'app|resources-tree|west_guestbook|1.8.3.gz')).toMatch(/belongs to agent west/);
    expect(gateway.session('east')!.info.capabilities).toContain('redis');
    direct.disconnect();
  });
});
