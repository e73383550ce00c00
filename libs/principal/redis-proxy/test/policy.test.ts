import { createMetricsRegistry } from '@pullplane/telemetry';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange, type Stack, startStack } from './harness.js';
import { plain, RespClient } from './resp-client.js';

// The default allow-list in front of a real principal redis-server with a password, plus the
// two additions of an operator (--allow-commands=client|list,dbsize).
const PASSWORD = 's3cret';
const registry = createMetricsRegistry({ collectDefaultMetrics: false });
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    agents: ['agent-a'],
    password: PASSWORD,
    proxy: { registry, allowCommands: ['client|list', 'DBSIZE'] },
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const refusal = (name: string) =>
  `ERR command '${name}' is not allowed through the pullplane redis proxy (an operator can allow it with --allow-commands)`;

/** Every administrative command the issue found passing through, with the name the refusal reports. */
const ADMIN: Array<[string[], string]> = [
  [['FLUSHALL'], 'flushall'],
  [['FLUSHALL', 'ASYNC'], 'flushall'],
  [['FLUSHDB'], 'flushdb'],
  [['CONFIG', 'SET', 'maxmemory', '1'], 'config|set'],
  [['CONFIG', 'SET', 'dir', '/tmp'], 'config|set'],
  [['CONFIG', 'GET', '*'], 'config|get'],
  [['CONFIG', 'REWRITE'], 'config|rewrite'],
  [['CONFIG', 'RESETSTAT'], 'config|resetstat'],
  [['ACL', 'SETUSER', 'intruder', 'on', '>pw', '+@all', '~*'], 'acl|setuser'],
  [['ACL', 'DELUSER', 'default'], 'acl|deluser'],
  [['ACL', 'LIST'], 'acl|list'],
  [['SCRIPT', 'LOAD', "return redis.call('FLUSHALL')"], 'script|load'],
  [['SCRIPT', 'FLUSH'], 'script|flush'],
  [['EVAL', "return redis.call('FLUSHALL')", '0'], 'eval'],
  [['EVAL_RO', 'return 1', '0'], 'eval_ro'],
  [['EVALSHA', 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db', '0'], 'evalsha'],
  [
    ['FUNCTION', 'LOAD', "#!lua name=x\nredis.register_function('f', function() return 1 end)"],
    'function|load',
  ],
  [['FUNCTION', 'FLUSH'], 'function|flush'],
  [['FCALL', 'f', '0'], 'fcall'],
  [['SAVE'], 'save'],
  [['BGSAVE'], 'bgsave'],
  [['BGREWRITEAOF'], 'bgrewriteaof'],
  [['REPLICAOF', 'NO', 'ONE'], 'replicaof'],
  [['REPLICAOF', '127.0.0.1', '1'], 'replicaof'],
  [['SLAVEOF', '127.0.0.1', '1'], 'slaveof'],
  [['FAILOVER'], 'failover'],
  [['CLIENT', 'PAUSE', '60000'], 'client|pause'],
  [['CLIENT', 'KILL', 'TYPE', 'normal'], 'client|kill'],
  [['CLIENT', 'NO-EVICT', 'ON'], 'client|no-evict'],
  [['CLIENT', 'UNBLOCK', '1'], 'client|unblock'],
  [['SWAPDB', '0', '1'], 'swapdb'],
  [['MIGRATE', '127.0.0.1', '1', 'canary', '0', '1000'], 'migrate'],
  [['MOVE', 'canary', '1'], 'move'],
  [['KEYS', '*'], 'keys'],
  [['RANDOMKEY'], 'randomkey'],
  [['SHUTDOWN', 'NOSAVE'], 'shutdown'],
  [['DEBUG', 'SLEEP', '0'], 'debug'],
  [['MODULE', 'LOAD', '/tmp/evil.so'], 'module|load'],
  [['MONITOR'], 'monitor'],
  [['SYNC'], 'sync'],
  [['PSYNC', '?', '-1'], 'psync'],
  [['LATENCY', 'RESET'], 'latency|reset'],
  [['SLOWLOG', 'RESET'], 'slowlog|reset'],
  [['MEMORY', 'PURGE'], 'memory|purge'],
  [['CLUSTER', 'RESET'], 'cluster|reset'],
  [['LASTSAVE'], 'lastsave'],
  [['WAIT', '1', '0'], 'wait'],
  [['MULTI'], 'multi'],
  [['OBJECT', 'ENCODING', 'canary'], 'object|encoding'],
];

/** What an administrative command could change or reveal, read straight from the principal. */
async function principalState(r: Redis): Promise<unknown> {
  const config = (await r.config('GET', '*')) as string[];
  return {
    canary: await r.get('canary'),
    dbsize: await r.dbsize(),
    db1: await r.call('SELECT', '1').then(async () => {
      const n = await r.dbsize();
      await r.call('SELECT', '0');
      return n;
    }),
    config: Object.fromEntries(config.flatMap((v, i) => (i % 2 === 0 ? [[v, config[i + 1]]] : []))),
    acl: await r.call('ACL', 'LIST'),
    scripts: await r.call('SCRIPT', 'EXISTS', 'e0e1f9fabfc9d4800c877a703b823ac0578ff8db'),
    functions: await r.call('FUNCTION', 'LIST'),
    lastsave: await r.lastsave(),
    role: ((await r.call('ROLE')) as unknown[])[0],
  };
}

describe('administrative commands', () => {
  it('are refused by name through ioredis, redis-cli (RESP2 and RESP3) and raw RESP3; the principal Redis is unchanged', async () => {
    const direct = s.principalClient;
    await direct.set('canary', 'still-here');
    const before = await principalState(direct);
    const viaIoredis = s.client();
    const resp3 = await RespClient.connect(s.proxy.port);
    expect(plain(await resp3.call('HELLO', '3', 'AUTH', 'default', PASSWORD))).toMatchObject({ proto: 3 });
    for (const [args, name] of ADMIN) {
      await expect(viaIoredis.call(args[0]!, ...args.slice(1)), args.join(' ')).rejects.toThrow(
        refusal(name),
      );
      expect(await resp3.call(...args), args.join(' ')).toEqual({ type: 'error', value: refusal(name) });
      // redis-cli turns SYNC, PSYNC and MONITOR into modes of its own.
      if (['sync', 'psync', 'monitor'].includes(name)) continue;
      for (const opts of [{}, { resp3: true }]) {
        expect((await s.cli(args, opts)).trim(), args.join(' ')).toBe(refusal(name));
      }
    }
    // A later command on the same connections proves none of them was paused, killed or
    // blocked, and the principal is running with everything as it was.
    expect(await viaIoredis.get('canary')).toBe('still-here');
    expect(plain(await resp3.call('GET', 'canary'))).toBe('still-here');
    expect(s.principal.isRunning()).toBe(true);
    expect(await principalState(direct)).toEqual(before);
    resp3.close();
  }, 60_000);

  it('are refused in one pipeline too, each in its place, the connection kept', async () => {
    const input = Buffer.concat([
      Buffer.from(`*2\r\n$4\r\nAUTH\r\n$${PASSWORD.length}\r\n${PASSWORD}\r\n`),
      ...ADMIN.map(([args]) =>
        Buffer.from(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`),
      ),
      Buffer.from('*2\r\n$3\r\nGET\r\n$6\r\ncanary\r\n'),
    ]);
    const { output, closed } = await rawExchange(s.proxy.port, input, { replies: ADMIN.length + 2 });
    expect(closed).toBe(false);
    expect(output).toBe(
      ['+OK', ...ADMIN.map(([, name]) => `-${refusal(name)}`), '$10', 'still-here', ''].join('\r\n'),
    );
  });

  it('are not even named before AUTH: NOAUTH, and nothing but AUTH, HELLO … AUTH, PING and QUIT runs', async () => {
    const c = await RespClient.connect(s.proxy.port);
    for (const args of [
      ['FLUSHALL'],
      ['CONFIG', 'GET', '*'],
      ['RESET'],
      ['ECHO', 'x'],
      ['GET', 'canary'],
      ['INFO'],
    ])
      expect(await c.call(...args), args.join(' ')).toEqual({
        type: 'error',
        value: 'NOAUTH Authentication required.',
      });
    expect(plain(await c.call('PING'))).toBe('PONG');
    expect(plain(await c.call('HELLO', '3'))).toMatchObject({ error: expect.stringMatching(/^NOAUTH/) });
    expect(plain(await c.call('AUTH', PASSWORD))).toBe('OK');
    expect(plain(await c.call('GET', 'canary'))).toBe('still-here');
    expect(plain(await c.call('QUIT'))).toBe('OK');
  });

  it('are counted by name, unknown names bucketed', async () => {
    const c = s.client();
    await expect(c.call('FLUSHALL')).rejects.toThrow(refusal('flushall'));
    await expect(c.call('CONFIG', 'NOSUCHSUB')).rejects.toThrow(refusal('config|nosuchsub'));
    await expect(c.call('NO-SUCH-COMMAND-1')).rejects.toThrow(refusal('no-such-command-1'));
    await expect(c.call('NO-SUCH-COMMAND-2')).rejects.toThrow(refusal('no-such-command-2'));
    const raw = await rawExchange(s.proxy.port, 'FLUSHDB\r\n', { replies: 1 });
    expect(raw.output).toBe('-NOAUTH Authentication required.\r\n');
    const values = (await registry.getSingleMetric('pullplane_redis_proxy_refused_commands_total')!.get())
      .values;
    const count = (command: string, reason: string) =>
      values.find((v) => v.labels.command === command && v.labels.reason === reason)?.value ?? 0;
    expect(count('flushall', 'not_allowed')).toBeGreaterThanOrEqual(1);
    expect(count('unknown', 'not_allowed')).toBeGreaterThanOrEqual(3);
    expect(count('flushdb', 'unauthenticated')).toBeGreaterThanOrEqual(1);
    // Only Redis' own names (and 'unknown') ever become labels.
    expect(values.some((v) => String(v.labels.command).includes('no-such'))).toBe(false);
  });
});

describe('what an operator adds with --allow-commands', () => {
  it('relays exactly the added command or subcommand and nothing next to it', async () => {
    const c = s.client();
    expect(await c.client('LIST')).toContain('cmd=client|list');
    expect(await c.dbsize()).toBeGreaterThanOrEqual(1);
    await expect(c.client('KILL', 'TYPE', 'normal')).rejects.toThrow(refusal('client|kill'));
    await expect(c.call('CONFIG', 'GET', 'maxmemory')).rejects.toThrow(refusal('config|get'));
  });
});

describe('what Argo CD sends', () => {
  const key = 'app|managed-resources|agent-a_guestbook|1.8.3.gz';
  const channel = 'app|managed-resources|agent-a_guestbook|1.8.3';

  it('go-redis v9: HELLO 3 AUTH SETNAME, CLIENT SETINFO, MAINT_NOTIFICATIONS declined, SELECT, then the cache and pub/sub', async () => {
    const c = await RespClient.connect(s.proxy.port);
    expect(
      plain(await c.call('HELLO', '3', 'AUTH', 'default', PASSWORD, 'SETNAME', 'argocd-server')),
    ).toMatchObject({
      proto: 3,
    });
    expect(
      await c.call('CLIENT', 'MAINT_NOTIFICATIONS', 'ON', 'moving-endpoint-type', 'internal-ip'),
    ).toEqual({
      type: 'error',
      value: "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.",
    });
    const replies = await c.pipeline([
      ['CLIENT', 'SETINFO', 'LIB-NAME', 'go-redis(,go1.24.0)'],
      ['CLIENT', 'SETINFO', 'LIB-VER', '9.22.0'],
      ['SELECT', '0'],
      ['PING'],
      ['SET', key, 'tree', 'EX', '600'],
      ['SET', key, 'other', 'PX', '600000', 'NX'],
      ['SET', key, 'tree2', 'KEEPTTL', 'XX'],
      ['GET', key],
      ['SET', 'revoked-token|abc', '', 'PX', '60000'],
      ['SET', 'repo|x|1', 'v', 'EX', '60'],
      ['RENAME', 'repo|x|1', 'repo|y|1'],
      ['GET', 'repo|y|1'],
      ['SCAN', '0', 'MATCH', 'revoked-token|*', 'COUNT', '10000'],
      ['PUBLISH', 'new-revoked-token', 'abc'],
      ['DEL', 'repo|y|1'],
      ['CLIENT', 'GETNAME'],
    ]);
    expect(replies.map(plain)).toEqual([
      'OK',
      'OK',
      'OK',
      'PONG',
      'OK',
      null,
      'OK',
      'tree2',
      'OK',
      'OK',
      'OK',
      'v',
      ['0', ['revoked-token|abc']],
      0,
      1,
      'argocd-server',
    ]);
    c.send('SUBSCRIBE', channel, 'new-revoked-token');
    await c.waitForPushes(2);
    await s.agents.get('agent-a')!.direct.publish('app|managed-resources|guestbook|1.8.3', '');
    await s.principalClient.publish('new-revoked-token', 'def');
    await c.waitForPushes(4);
    expect(c.pushes.slice(2).map(plain).sort()).toEqual(
      [
        ['message', channel, ''],
        ['message', 'new-revoked-token', 'def'],
      ].sort(),
    );
    c.send('UNSUBSCRIBE', channel, 'new-revoked-token');
    await c.waitForPushes(6);
    c.send('PSUBSCRIBE', 'app|resources-tree|agent-a_*');
    await c.waitForPushes(7);
    c.send('PUNSUBSCRIBE', 'app|resources-tree|agent-a_*');
    await c.waitForPushes(8);
    expect(
      c.pushes
        .slice(4)
        .map((p) => plain(p) as unknown[])
        .map((p) => p[0]),
    ).toEqual(['unsubscribe', 'unsubscribe', 'psubscribe', 'punsubscribe']);
    expect(plain(await c.call('QUIT'))).toBe('OK');
  });

  it('ioredis (RESP2): every allowed command on principal and agent keys', async () => {
    const c = s.client();
    for (const k of ['principal|x', key]) {
      expect(await c.set(k, 'a', 'EX', 60)).toBe('OK');
      expect(await c.set(k, 'b', 'PX', 60_000, 'NX')).toBeNull();
      // ioredis's typings have no overload for XX with KEEPTTL; the command goes out as written.
      expect(await c.call('SET', k, 'c', 'XX', 'KEEPTTL')).toBe('OK');
      expect(await c.get(k)).toBe('c');
      expect(await c.setex(k, 60, 'd')).toBe('OK');
      expect(await c.psetex(k, 60_000, 'e')).toBe('OK');
      expect(await c.mget(k, 'missing')).toEqual(['e', null]);
      expect(await c.exists(k)).toBe(1);
      expect(await c.expire(k, 120)).toBe(1);
      expect(await c.pexpire(k, 120_000)).toBe(1);
      expect(await c.ttl(k)).toBeGreaterThan(100);
      expect(await c.pttl(k)).toBeGreaterThan(100_000);
      expect(await c.publish(k, '')).toBe(0);
      expect(await c.unlink(k)).toBe(1);
      expect(await c.set(k, 'f')).toBe('OK');
      expect(await c.del(k)).toBe(1);
    }
    expect(await c.echo('e')).toBe('e');
    expect(await c.ping()).toBe('PONG');
    expect(await c.info()).toContain('loading:0');
  });

  it('redis-cli in RESP2 and RESP3: the same, and INFO shows nothing of the principal', async () => {
    for (const opts of [{}, { resp3: true }]) {
      const piped = await s.cli([], {
        ...opts,
        input: [
          `SET ${key} v EX 60`,
          `GET ${key}`,
          `TTL ${key}`,
          'SET principal|y w PX 60000',
          `MGET ${key} principal|y`,
          `EXISTS ${key} principal|y`,
          `DEL ${key} principal|y`,
          'PING',
          '',
        ].join('\n'),
      });
      expect(piped.trim().split('\n')).toEqual(['OK', 'v', '60', 'OK', 'v', 'w', '2', '2', 'PONG']);
      const info = await s.cli(['INFO'], opts);
      expect(info).toContain('redis_version:');
      expect(info).not.toMatch(/connected_clients|used_memory|executable|config_file|master_repl/);
    }
  });
});
