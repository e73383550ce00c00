import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack, waitFor } from './harness.js';
import { plain, RespClient } from './resp-client.js';

let s: Stack;
beforeAll(async () => {
  // The relaying machinery (transactions, own connections, blocking commands) with what an
  // operator may add to the allow-list; the default list has its own suite (policy.test.ts).
  s = await startStack({
    agents: ['agent-a', 'agent-b'],
    proxy: {
      allowCommands: [
        'incr',
        'hset',
        'hget',
        'hgetall',
        'multi',
        'exec',
        'discard',
        'watch',
        'mset',
        'eval',
        'blpop',
        'rpush',
        'client|list',
      ],
    },
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const agentA = () => s.agents.get('agent-a')!;
const agentB = () => s.agents.get('agent-b')!;

describe('ioredis (RESP2) through the proxy', () => {
  it('serves principal keys from the principal Redis, unchanged', async () => {
    const c = s.client();
    expect(await c.set('settings|x', 'v1')).toBe('OK');
    expect(await c.get('settings|x')).toBe('v1');
    expect(await s.principalClient.get('settings|x')).toBe('v1');
    expect(await c.incr('counter')).toBe(1);
    expect(await c.hset('h', 'f', 'v')).toBe(1);
    expect(await c.hgetall('h')).toEqual({ f: 'v' });
    // An application of the control plane's own namespace (no `<agent>_`): principal.
    await c.set('app|managed-resources|guestbook|1.8.3.gz', 'local');
    expect(await s.principalClient.get('app|managed-resources|guestbook|1.8.3.gz')).toBe('local');
  });

  it("serves agent keys from the agent's own Redis, with <agent>_ cut out", async () => {
    const c = s.client();
    const key = 'app|managed-resources|agent-a_guestbook|1.8.3.gz';
    expect(await c.set(key, 'tree', 'PX', 60_000)).toBe('OK');
    expect(await agentA().direct.get('app|managed-resources|guestbook|1.8.3.gz')).toBe('tree');
    expect(await s.principalClient.exists(key)).toBe(0);
    expect(await agentB().direct.dbsize()).toBe(0);
    expect(await c.get(key)).toBe('tree');
    const ttl = await c.pttl(key);
    expect(ttl).toBeGreaterThan(50_000);
    expect(await c.ttl(key)).toBeGreaterThan(50);
    expect(await c.expire(key, 100)).toBe(1);
    expect(await c.pexpire(key, 100_000)).toBe(1);
    expect(await c.exists(key)).toBe(1);
    expect(await c.get('app|managed-resources|agent-a_missing|1.8.3.gz')).toBeNull();
    expect(await c.setex('app|resources-tree|agent-a_x|1.gz', 100, 'a')).toBe('OK');
    expect(await c.psetex('app|resources-tree|agent-a_y|1.gz', 100_000, 'b')).toBe('OK');
    expect(await c.set('app|resources-tree|agent-a_x|1.gz', 'c', 'NX')).toBeNull();
    expect(await c.set('app|resources-tree|agent-a_x|1.gz', 'd', 'XX', 'GET')).toBe('a');
    expect(await c.unlink('app|resources-tree|agent-a_y|1.gz')).toBe(1);
    expect(await c.del(key)).toBe(1);
    expect(await c.get(key)).toBeNull();
  });

  it('passes gzip-compressed values byte-exact', async () => {
    const c = s.client();
    const value = gzipSync(
      JSON.stringify({ items: Array.from({ length: 2000 }, (_, i) => ({ i, n: `pod-${i}` })) }),
    );
    const key = 'app|resources-tree|agent-b_guestbook|1.8.3.gz';
    await c.set(key, value, 'PX', 30_000);
    const back = await c.getBuffer(key);
    expect(back?.equals(value)).toBe(true);
    expect((await agentB().direct.getBuffer('app|resources-tree|guestbook|1.8.3.gz'))?.equals(value)).toBe(
      true,
    );
    expect(JSON.parse(gunzipSync(back!).toString()).items).toHaveLength(2000);
    const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await c.set('app|resources-tree|agent-b_bin|1.gz', binary);
    expect((await c.getBuffer('app|resources-tree|agent-b_bin|1.gz'))?.equals(binary)).toBe(true);
  });

  it('keeps replies in order in a pipeline mixing principal keys and two agents', async () => {
    const c = s.client();
    const p = c.pipeline();
    for (let i = 0; i < 50; i++) {
      p.set(`p${i}`, `principal-${i}`);
      p.set(`app|managed-resources|agent-a_app${i}|1.gz`, `a-${i}`);
      p.set(`app|managed-resources|agent-b_app${i}|1.gz`, `b-${i}`);
      p.get(`p${i}`);
      p.get(`app|managed-resources|agent-a_app${i}|1.gz`);
      p.get(`app|managed-resources|agent-b_app${i}|1.gz`);
      p.ping(`n${i}`);
    }
    const results = (await p.exec())!;
    for (let i = 0; i < 50; i++) {
      const r = results.slice(i * 7, i * 7 + 7).map(([err, v]) => err ?? v);
      expect(r).toEqual(['OK', 'OK', 'OK', `principal-${i}`, `a-${i}`, `b-${i}`, `n${i}`]);
    }
  });

  it('answers MGET, DEL and EXISTS across agents and principal keys', async () => {
    const c = s.client();
    await c.set('m-principal', 'P');
    await c.set('app|managed-resources|agent-a_m|1.gz', 'A');
    await c.set('app|managed-resources|agent-b_m|1.gz', 'B');
    const keys = [
      'app|managed-resources|agent-b_m|1.gz',
      'm-principal',
      'missing',
      'app|managed-resources|agent-a_m|1.gz',
      'app|managed-resources|agent-a_none|1.gz',
    ];
    expect(await c.mget(...keys)).toEqual(['B', 'P', null, 'A', null]);
    expect(await c.exists(...keys)).toBe(3);
    expect(await c.del(...keys)).toBe(3);
    expect(await c.mget(...keys)).toEqual([null, null, null, null, null]);
  });

  it('refuses what it cannot serve for agent keys with a clear error, and stays usable', async () => {
    const c = s.client();
    const key = 'app|managed-resources|agent-a_x|1.gz';
    await expect(c.hget(key, 'f')).rejects.toThrow(/^ERR unsupported command for agent key/);
    await expect(c.incr(key)).rejects.toThrow(/^ERR unsupported command for agent key/);
    await expect(c.eval('return 1', 1, key)).rejects.toThrow(/'eval' cannot be used with agent keys/);
    await expect(c.rename(key, 'other')).rejects.toThrow(/'rename' cannot be used with agent keys/);
    await expect(c.mset(key, 'a', 'b', 'c')).rejects.toThrow(/'mset' cannot be used with agent keys/);
    await expect(c.watch(key)).rejects.toThrow(/'watch' cannot be used with agent keys/);
    expect(await c.ping()).toBe('PONG');
  });

  it('runs MULTI/EXEC on principal keys and aborts one that touches an agent key', async () => {
    const c = s.client();
    const ok = await c.multi().set('tx1', 'a').incr('tx2').get('tx1').exec();
    expect(ok).toEqual([
      [null, 'OK'],
      [null, 1],
      [null, 'a'],
    ]);
    await expect(
      c.multi().set('tx3', 'a').get('app|managed-resources|agent-a_x|1.gz').exec(),
    ).rejects.toThrow(/EXECABORT/);
    expect(await c.get('tx3')).toBeNull();
    expect(await c.ping()).toBe('PONG');
  });

  it('inside MULTI: queues PING, refuses what the proxy answers itself (INFO, SUBSCRIBE), runs RESET at once', async () => {
    const c = await RespClient.connect(s.proxy.port);
    const replies = await c.pipeline([
      ['CLIENT', 'SETNAME', 'before-reset'],
      ['MULTI'],
      ['SET', 'tx-local', 'a'],
      ['PING'],
      ['INFO'],
      ['SUBSCRIBE', 'tx-channel'],
      ['EXEC'],
      ['GET', 'tx-local'],
      ['MULTI'],
      ['SET', 'tx-local', 'b'],
      ['RESET'],
      ['EXEC'],
      ['GET', 'tx-local'],
      ['CLIENT', 'GETNAME'],
    ]);
    expect(replies.map(plain)).toEqual([
      'OK',
      'OK',
      'QUEUED',
      'QUEUED',
      { error: 'ERR INFO inside MULTI is not supported through the pullplane redis proxy' },
      { error: 'ERR SUBSCRIBE inside MULTI is not supported through the pullplane redis proxy' },
      { error: 'EXECABORT Transaction discarded because of previous errors.' },
      null,
      'OK',
      'QUEUED',
      'RESET',
      { error: 'ERR EXEC without MULTI' },
      null,
      // RESET ran in the proxy too: the name it keeps is gone.
      null,
    ]);
    c.close();
  });

  it('answers "agent <name> is not connected" without waiting for the agent, and keeps the connection', async () => {
    const c = s.client();
    await expect(c.get('app|managed-resources|agent-z_app|1.gz')).rejects.toThrow(
      /^ERR agent agent-z is not connected$/,
    );
    // agent-z never connects in this file: the answer cannot have waited for it.
    expect(s.router.lookup('agent-z')).toBeUndefined();
    expect(await c.get('app|managed-resources|agent-a_missing|1.gz')).toBeNull();
  });

  it('keeps SELECT, CLIENT SETNAME/GETNAME/ID/SETINFO and ECHO working', async () => {
    const c = s.client();
    expect(await c.select(2)).toBe('OK');
    await c.set('db2-key', 'x');
    expect(await s.principalClient.exists('db2-key')).toBe(0);
    expect(await c.client('SETNAME', 'argocd-server')).toBe('OK');
    expect(await c.client('GETNAME')).toBe('argocd-server');
    expect(typeof (await c.client('ID'))).toBe('number');
    expect(await c.call('CLIENT', 'SETINFO', 'LIB-NAME', 'go-redis')).toBe('OK');
    expect(await c.echo('hi')).toBe('hi');
    const list = (await c.client('LIST')) as string;
    expect(list).toContain('name=argocd-server');
    expect(list).toContain('db=2');
  });

  it('relays pub/sub from principal and agent channels on one connection', async () => {
    const sub = s.client();
    const got: Array<[string, string]> = [];
    sub.on('message', (ch: string, msg: string) => got.push([ch, msg]));
    const agentChannel = 'app|managed-resources|agent-a_guestbook|1.8.3';
    // Other connections of this file hold pipelines to the agents: count from here.
    const baseline = s.activeStreams('agent-a');
    expect(await sub.subscribe('principal-channel', agentChannel)).toBe(2);
    expect(s.activeStreams('agent-a')).toBe(baseline + 1);
    await s.principalClient.publish('principal-channel', 'hello');
    await agentA().direct.publish('app|managed-resources|guestbook|1.8.3', '');
    await waitFor(() => got.length === 2);
    expect(got.sort()).toEqual([
      [agentChannel, ''],
      ['principal-channel', 'hello'],
    ]);
    // Only the named agent's channel: agent-b publishing the same local name reaches nobody.
    // Nobody listens for that name on agent-b's Redis; a marker on an agent-b channel the
    // client does hold, published after it, proves nothing of agent-b's came through before.
    const markerChannel = 'app|managed-resources|agent-b_marker|1';
    expect(await sub.subscribe(markerChannel)).toBe(3);
    expect(await agentB().direct.publish('app|managed-resources|guestbook|1.8.3', 'wrong')).toBe(0);
    await agentB().direct.publish('app|managed-resources|marker|1', 'marker');
    await waitFor(() => got.length === 3);
    expect(got[2]).toEqual([markerChannel, 'marker']);
    await sub.unsubscribe(markerChannel);
    got.pop();
    await sub.unsubscribe(agentChannel);
    await waitFor(() => s.proxy.subscriptions.agents === 0);
    await waitFor(() => s.activeStreams('agent-a') === baseline);
    // The agent drops its Redis subscription once the stream is gone; from then on the
    // publish reaches no subscriber at all.
    const numsub = async () =>
      (
        (await agentA().direct.pubsub('NUMSUB', 'app|managed-resources|guestbook|1.8.3')) as [string, number]
      )[1];
    await waitFor(async () => (await numsub()) === 0);
    expect(await agentA().direct.publish('app|managed-resources|guestbook|1.8.3', 'after')).toBe(0);
    expect(got).toHaveLength(2);
  });

  it('relays pattern subscriptions with the agent put back into the channel name', async () => {
    const sub = s.client();
    const got: Array<[string, string, string]> = [];
    const baseline = s.activeStreams('agent-b');
    sub.on('pmessage', (p: string, ch: string, msg: string) => got.push([p, ch, msg]));
    await sub.psubscribe('app|resources-tree|agent-b_*');
    await agentB().direct.publish('app|resources-tree|podinfo|1.8.3', 'x');
    await waitFor(() => got.length === 1);
    expect(got[0]).toEqual(['app|resources-tree|agent-b_*', 'app|resources-tree|agent-b_podinfo|1.8.3', 'x']);
    sub.disconnect();
    await waitFor(() => s.proxy.subscriptions.agents === 0 && s.activeStreams('agent-b') === baseline);
  });
  it('accepts in RESP2 subscriber mode only what Redis does there, and RESET leaves it', async () => {
    const c = await RespClient.connect(s.proxy.port);
    const replies = await c.pipeline([
      ['SUBSCRIBE', 'resp2-sub'],
      ['GET', 'resp2-sub-key'],
      ['PING'],
      ['RESET'],
      ['GET', 'resp2-sub-key'],
    ]);
    expect(replies.map(plain)).toEqual([
      ['subscribe', 'resp2-sub', 1],
      {
        error:
          "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
      },
      ['pong', ''],
      'RESET',
      null,
    ]);
    c.close();
  });
});

describe('RESP3 through the proxy', () => {
  it('speaks HELLO 3: maps, RESP3 nulls, pushes for pub/sub next to ordinary replies', async () => {
    const c = await RespClient.connect(s.proxy.port);
    const hello = plain(await c.call('HELLO', '3'));
    expect(hello).toMatchObject({ server: 'redis', proto: 3, mode: 'standalone' });
    const key = 'app|managed-resources|agent-a_r3|1.gz';
    expect(await c.call('SET', key, 'v')).toEqual({ type: 'simple', value: 'OK' });
    expect(await c.call('GET', 'app|managed-resources|agent-a_nope|1.gz')).toEqual({ type: 'null' });
    expect(await c.call('GET', 'principal-nope')).toEqual({ type: 'null' });
    expect(
      plain(await c.call('MGET', key, 'principal-nope', 'app|managed-resources|agent-b_nope|1.gz')),
    ).toEqual(['v', null, null]);
    expect(plain(await c.call('HGETALL', 'h'))).toEqual({ f: 'v' });
    // RESP3 confirms subscriptions with pushes, not replies.
    c.send('SUBSCRIBE', 'app|managed-resources|agent-a_r3');
    await c.waitForPushes(1);
    expect(plain(c.pushes[0]!)).toEqual(['subscribe', 'app|managed-resources|agent-a_r3', 1]);
    // Ordinary commands keep working while subscribed in RESP3.
    expect(plain(await c.call('GET', key))).toBe('v');
    await agentA().direct.publish('app|managed-resources|r3', '');
    await c.waitForPushes(2);
    expect(plain(c.pushes[1]!)).toEqual(['message', 'app|managed-resources|agent-a_r3', '']);
    c.close();
  });
});

describe('shared and own principal connections', () => {
  it('keeps order when a client moves from the shared connection to its own mid-pipeline', async () => {
    const c = await RespClient.connect(s.proxy.port);
    const replies = await c.pipeline([
      ['SET', 'order', 'a'],
      ['SET', 'order', 'b'],
      ['INCR', 'order-n'],
      ['MULTI'],
      ['GET', 'order'],
      ['INCR', 'order-n'],
      ['EXEC'],
      ['SELECT', '3'],
      ['GET', 'order'],
      ['SELECT', '0'],
      ['GET', 'order'],
    ]);
    expect(replies.map(plain)).toEqual([
      'OK',
      'OK',
      1,
      'OK',
      'QUEUED',
      'QUEUED',
      ['b', 2],
      'OK',
      null,
      'OK',
      'b',
    ]);
    c.close();
  });

  it('switches protocol mid-pipeline without reordering', async () => {
    const c = await RespClient.connect(s.proxy.port);
    const replies = await c.pipeline([
      ['SET', 'proto', '1'],
      ['HELLO', '3'],
      ['GET', 'proto'],
      ['GET', 'none'],
    ]);
    expect(replies.map(plain)).toMatchObject(['OK', { proto: 3 }, '1', null]);
    expect(replies[3]).toEqual({ type: 'null' });
    c.close();
  });

  it('runs what follows HELLO only after what came before it has run on the principal', async () => {
    // The protocol decides which shared principal connection a command takes: after HELLO 3 a
    // read must not overtake, on the RESP3 connection, a write still parked on the RESP2 one.
    // Writes are parked by CLIENT PAUSE WRITE on the principal; reads go on.
    const c = await RespClient.connect(s.proxy.port);
    const other = await RespClient.connect(s.proxy.port);
    await s.principalClient.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    try {
      const replies = c.pipeline([
        ['SET', 'proto-order', 'v'],
        ['HELLO', '3'],
        ['EXISTS', 'proto-order'],
      ]);
      await waitFor(async () => ((await s.principalClient.client('LIST')) as string).includes('flags=b'));
      // Another client's read on the shared RESP3 connection: an EXISTS sent before it on
      // that connection has run once this is answered.
      expect(
        (
          await other.pipeline([
            ['HELLO', '3'],
            ['EXISTS', 'proto-order'],
          ])
        ).map(plain),
      ).toMatchObject([{ proto: 3 }, 0]);
      await s.principalClient.call('CLIENT', 'UNPAUSE');
      expect((await replies).map(plain)).toMatchObject(['OK', { proto: 3 }, 1]);
    } finally {
      await s.principalClient.call('CLIENT', 'UNPAUSE');
      c.close();
      other.close();
    }
  });

  it('lets one client block (BLPOP) without holding up the others', async () => {
    const blocker = s.client();
    const other = s.client();
    const order: string[] = [];
    const blocked = blocker.blpop('jobs', 10).then((r) => {
      order.push('blpop');
      return r;
    });
    // The BLPOP is parked in Redis before the other client's command is sent.
    await waitFor(async () => ((await s.principalClient.client('LIST')) as string).includes('cmd=blpop'));
    expect(await other.set('not-blocked', '1')).toBe('OK');
    order.push('set');
    await other.rpush('jobs', 'j1');
    expect(await blocked).toEqual(['jobs', 'j1']);
    expect(order).toEqual(['set', 'blpop']);
  });
});

describe('redis-cli through the proxy', () => {
  it('works in RESP2 and with -3', async () => {
    await s.cli(['SET', 'app|managed-resources|agent-a_cli|1.gz', 'hello']);
    expect((await s.cli(['GET', 'app|managed-resources|agent-a_cli|1.gz'])).trim()).toBe('hello');
    expect((await s.cli(['GET', 'app|managed-resources|agent-a_none|1.gz'])).trim()).toBe('');
    expect((await s.cli(['-3', 'GET', 'app|managed-resources|agent-a_cli|1.gz'])).trim()).toBe('hello');
    expect((await s.cli(['GET', 'app|managed-resources|agent-a_none|1.gz'], { resp3: true })).trim()).toBe(
      '',
    );
    expect((await s.cli(['HELLO', '3'], { resp3: true })).trim()).toContain('proto');
    expect((await s.cli(['GET', 'app|managed-resources|agent-q_x|1.gz'])).trim()).toBe(
      'ERR agent agent-q is not connected',
    );
    const piped = await s.cli([], {
      input: 'SET plain 1\nGET app|managed-resources|agent-a_cli|1.gz\nGET plain\nPING\n',
    });
    expect(piped.trim().split('\n')).toEqual(['OK', 'hello', '1', 'PONG']);
  });
});
