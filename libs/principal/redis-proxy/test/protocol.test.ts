import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { encodeCommand } from '@pullplane/resp';
import { createMetricsRegistry } from '@pullplane/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buffered,
  kernelSocketBytes,
  rawExchange,
  refusals,
  type Stack,
  startStack,
  until,
  waitFor,
} from './harness.js';
import { plain, RespClient } from './resp-client.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const PUBSUB_OUTPUT = 256 * KiB;
const OUTPUT = 4 * MiB;
const registry = createMetricsRegistry({ collectDefaultMetrics: false });
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    agents: ['agent-a', 'agent-b'],
    password: 's3cret',
    proxy: {
      registry,
      limits: { maxPubSubOutputBytes: PUBSUB_OUTPUT, maxOutputBytes: OUTPUT, maxBulkLength: 8 * MiB },
    },
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const agentA = () => s.agents.get('agent-a')!;
const agentB = () => s.agents.get('agent-b')!;
const cmd = (...args: Array<string | Buffer>) => encodeCommand(args);
const AUTH = cmd('AUTH', 's3cret');

async function quiet(): Promise<void> {
  await waitFor(() => s.proxy.connections === 0, 5_000);
  for (const name of s.agents.keys()) await waitFor(() => s.activeStreams(name) === 0, 5_000);
  expect(s.proxy.subscriptions).toEqual({ principal: 0, agents: 0 });
}

describe('authentication', () => {
  it('requires the password with AUTH or HELLO AUTH, and nothing passes before it', async () => {
    const c = await RespClient.connect(s.proxy.port);
    expect(plain(await c.call('GET', 'app|managed-resources|agent-a_x|1'))).toEqual({
      error: 'NOAUTH Authentication required.',
    });
    expect(plain(await c.call('SUBSCRIBE', 'x'))).toEqual({ error: 'NOAUTH Authentication required.' });
    expect(plain(await c.call('HELLO', '3'))).toMatchObject({
      error: expect.stringMatching(/^NOAUTH HELLO/),
    });
    expect(plain(await c.call('AUTH', 'wrong'))).toEqual({
      error: 'WRONGPASS invalid username-password pair or user is disabled.',
    });
    expect(plain(await c.call('HELLO', '3', 'AUTH', 'default', 'wrong'))).toMatchObject({
      error: expect.stringMatching(/^WRONGPASS/),
    });
    expect(plain(await c.call('HELLO', '3', 'AUTH', 'default', 's3cret', 'SETNAME', 'argocd'))).toMatchObject(
      {
        proto: 3,
      },
    );
    expect(plain(await c.call('CLIENT', 'GETNAME'))).toBe('argocd');
    expect(plain(await c.call('SET', 'authed', '1'))).toBe('OK');
    // RESET de-authenticates, as in Redis.
    expect(plain(await c.call('RESET'))).toBe('RESET');
    expect(plain(await c.call('GET', 'authed'))).toEqual({ error: 'NOAUTH Authentication required.' });
    expect(plain(await c.call('AUTH', 'default', 's3cret'))).toBe('OK');
    expect(plain(await c.call('GET', 'authed'))).toBe('1');
    c.close();
    expect((await s.cli(['GET', 'authed'])).trim()).toBe('1');
    expect((await s.cli(['GET', 'authed'], { password: 'nope' })).trim()).toMatch(/NOAUTH|WRONGPASS/);
    await quiet();
  });
});

describe('malformed input', () => {
  const cases: Array<[string, Buffer | string, RegExp]> = [
    ['bad multibulk length', '*abc\r\n', /^-ERR Protocol error: invalid multibulk length\r\n$/],
    ['bad bulk length', '*1\r\n$x\r\n', /^-ERR Protocol error: invalid bulk length\r\n$/],
    ['not a bulk', '*2\r\n$3\r\nGET\r\n:1\r\n', /^-ERR Protocol error: expected '\$', got ':'\r\n$/],
    [
      'unterminated bulk',
      '*1\r\n$3\r\nfooXY',
      /^-ERR Protocol error: bulk payload not terminated by CRLF\r\n$/,
    ],
    ['unbalanced inline quotes', 'GET "abc\r\n', /^-ERR Protocol error: unbalanced quotes in request\r\n$/],
    [
      'bulk over the limit before AUTH',
      '*1\r\n$99999999999\r\n',
      /^-ERR Protocol error: unauthenticated bulk length \(at most 16384 bytes before AUTH, --max-unauthenticated-bytes\)\r\n$/,
    ],
    [
      'too many arguments before AUTH',
      '*99999999\r\n',
      /^-ERR Protocol error: unauthenticated multibulk length \(at most 10 arguments before AUTH, --max-unauthenticated-args\)\r\n$/,
    ],
    [
      'bulk over the limit',
      Buffer.concat([AUTH, Buffer.from('*1\r\n$99999999999\r\n')]),
      /^\+OK\r\n-ERR Protocol error: invalid bulk length \(at most 8388608 bytes, --max-bulk-length\)\r\n$/,
    ],
    [
      'too many arguments',
      Buffer.concat([AUTH, Buffer.from('*99999999\r\n')]),
      /^\+OK\r\n-ERR Protocol error: invalid multibulk length \(at most 16384 arguments, --max-command-args\)\r\n$/,
    ],
  ];
  for (const [name, input, expected] of cases) {
    it(`answers a protocol error and closes: ${name}`, async () => {
      const { output, closed } = await rawExchange(s.proxy.port, input, 'close');
      expect(output).toMatch(expected);
      expect(closed).toBe(true);
    });
  }

  it('answers what came before the bad frame first, in order, then the error', async () => {
    const input = Buffer.concat([
      AUTH,
      cmd('SET', 'app|managed-resources|agent-a_before|1', 'v'),
      cmd('GET', 'app|managed-resources|agent-a_before|1'),
      Buffer.from('*1\r\n$-5\r\n'),
    ]);
    const { output, closed } = await rawExchange(s.proxy.port, input, 'close');
    expect(output).toBe('+OK\r\n+OK\r\n$1\r\nv\r\n-ERR Protocol error: invalid bulk length\r\n');
    expect(closed).toBe(true);
  });

  it('serves valid inline commands like Redis, and drops HTTP requests', async () => {
    expect(
      (await rawExchange(s.proxy.port, 'AUTH s3cret\r\nPING\r\nECHO "a b"\n', { replies: 3 })).output,
    ).toBe('+OK\r\n+PONG\r\n$3\r\na b\r\n');
    // On an agent's key too: the agent gets the command as multibulk.
    const agentKey = 'app|managed-resources|agent-a_inline|1.gz';
    expect(
      (
        await rawExchange(s.proxy.port, `AUTH s3cret\r\nSET ${agentKey} "x y"\r\nGET ${agentKey}\n`, {
          replies: 3,
        })
      ).output,
    ).toBe('+OK\r\n+OK\r\n$3\r\nx y\r\n');
    const http = await rawExchange(s.proxy.port, 'POST / HTTP/1.1\r\nHost: x\r\n\r\n', 'close');
    expect(http.closed).toBe(true);
    expect(http.output).toBe('');
  });

  it('survives random bytes and mutated pipelines, leaking no connections or streams', async () => {
    const valid = Buffer.concat([
      AUTH,
      cmd('GET', 'app|managed-resources|agent-a_x|1.gz'),
      cmd('SET', 'app|resources-tree|agent-b_y|1.gz', randomBytes(100)),
      cmd('SUBSCRIBE', 'app|resources-tree|agent-a_z', 'plain'),
      cmd('MGET', 'a', 'app|managed-resources|agent-b_x|1', 'app|managed-resources|agent-a_x|1'),
      cmd('PSUBSCRIBE', 'app|managed-resources|agent-b_*'),
    ]);
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const inputs: Buffer[] = [];
    for (let i = 0; i < 60; i++) {
      if (i % 3 === 0) {
        inputs.push(randomBytes(1 + rand(300)));
        continue;
      }
      const m = Buffer.from(valid);
      for (let j = 0; j < 1 + rand(4); j++) m[AUTH.length + rand(m.length - AUTH.length)] = rand(256);
      inputs.push(i % 3 === 1 ? m : m.subarray(0, AUTH.length + rand(m.length - AUTH.length)));
    }
    // Many at once, each sent whole and half-closed; done when the proxy has closed it in turn.
    for (let i = 0; i < inputs.length; i += 20)
      await Promise.all(inputs.slice(i, i + 20).map((input) => rawExchange(s.proxy.port, input, 'end')));
    await quiet();
    const c = s.client();
    expect(await c.ping()).toBe('PONG');
    expect(await c.get('app|managed-resources|agent-a_missing|1')).toBeNull();
    c.disconnect();
    await quiet();
  }, 60_000);
});

describe('isolation', () => {
  it('never lets a key reach another agent than the one it names', async () => {
    const c = s.client();
    await agentA().direct.flushall();
    await agentB().direct.flushall();
    const ok = [
      'app|managed-resources|agent-a_x|agent-b_y', // another agent later in the key
      'app|managed-resources|agent-a_agent-b_x|1', // another agent right after the cut
      'app|resources-tree|agent-a_|1', // empty application part
      'app|resources-tree|agent-a_||', // empty later fields
      Buffer.concat([
        Buffer.from('app|resources-tree|agent-a_'),
        Buffer.from([0, 0xff, 13, 10, 0x7c]),
        Buffer.from('|1'),
      ]),
    ];
    for (const k of ok) expect(await c.set(k, 'v')).toBe('OK');
    const refused = [
      'app|managed-resources|agent-B_x|1',
      'app|managed-resources|agent-b\r\n_x|1',
      'app|managed-resources|agent-b\x00_x|1',
      'app|managed-resources| agent-b_x|1',
      'app|managed-resources|agent-b*_x|1',
      'app|managed-resources|_agent-b_x|1',
      'app|managed-resources|agent-b/../agent-a_x|1',
    ];
    for (const k of refused)
      await expect(c.set(k, 'v'), JSON.stringify(k)).rejects.toThrow(/^ERR invalid agent key/);
    await expect(c.subscribe('app|managed-resources|agent-b\r\n_x')).rejects.toThrow(/invalid agent key/);
    expect(await agentB().direct.dbsize()).toBe(0);
    const local = (await agentA().direct.keysBuffer('*')).map((k) => k.toString('latin1')).sort();
    expect(local).toEqual(
      [
        'app|managed-resources|x|agent-b_y',
        'app|managed-resources|agent-b_x|1',
        'app|resources-tree||1',
        'app|resources-tree|||',
        `app|resources-tree|${Buffer.from([0, 0xff, 13, 10, 0x7c]).toString('latin1')}|1`,
      ].sort(),
    );
    expect(await s.principalClient.exists(...ok.map(String))).toBe(0);
    c.disconnect();
  });

  it('has the agent refuse a key naming another agent even if a stream carried one', async () => {
    const stream = s.router.open('agent-a', {
      head: {
        case: 'redis',
        value: {
          args: [Buffer.from('GET'), Buffer.from('app|managed-resources|agent-b_x|1')],
          respVersion: 2,
        },
      },
    });
    const chunks: Buffer[] = [];
    stream.on('data', (d: Buffer) => chunks.push(d));
    await new Promise((r) => stream.on('end', r));
    expect(Buffer.concat(chunks).toString()).toMatch(
      /^-ERR agent agent-a refused the key: it belongs to agent agent-b/,
    );
    const other = s.router.open('agent-a', {
      head: { case: 'redis', value: { args: [Buffer.from('FLUSHALL')], respVersion: 2 } },
    });
    const out: Buffer[] = [];
    other.on('data', (d: Buffer) => out.push(d));
    await new Promise((r) => other.on('end', r));
    expect(Buffer.concat(out).toString()).toMatch(/^-ERR unsupported command for agent key/);
  });
});

describe('agents that come and go', () => {
  it('re-establishes an agent subscription after the agent reconnects', async () => {
    const sub = s.client();
    const got: string[] = [];
    sub.on('message', (_ch: string, msg: string) => got.push(msg));
    await sub.subscribe('app|managed-resources|agent-a_live|1.8.3');
    await agentA().direct.publish('app|managed-resources|live|1.8.3', 'one');
    await waitFor(() => got.length === 1);
    await agentA().reconnect();
    // The subscription comes back on its own; publish until it does.
    await expect
      .poll(
        async () => {
          await agentA().direct.publish('app|managed-resources|live|1.8.3', 'two');
          return got.includes('two');
        },
        { timeout: 5_000, interval: 100 },
      )
      .toBe(true);
    sub.disconnect();
    await quiet();
  });

  it('subscribes to an agent that is away and delivers once it connects', async () => {
    const b = agentB();
    await b.agent.stop();
    await waitFor(() => s.router.lookup('agent-b') === undefined);
    const c = s.client();
    await expect(c.get('app|managed-resources|agent-b_x|1')).rejects.toThrow(
      /^ERR agent agent-b is not connected$/,
    );
    const sub = s.client();
    const got: string[] = [];
    sub.on('message', (_ch: string, msg: string) => got.push(msg));
    // The subscription is accepted while agent-b is still away, not held until it returns.
    expect(await sub.subscribe('app|managed-resources|agent-b_later|1')).toBe(1);
    expect(s.router.lookup('agent-b')).toBeUndefined();
    b.agent.start();
    await waitFor(() => s.router.lookup('agent-b') !== undefined, 10_000);
    await expect
      .poll(
        async () => {
          await b.direct.publish('app|managed-resources|later|1', 'hi');
          return got.length > 0;
        },
        { timeout: 5_000, interval: 100 },
      )
      .toBe(true);
    expect(await c.get('app|managed-resources|agent-b_x|1')).toBeNull();
    c.disconnect();
    sub.disconnect();
    await quiet();
  });
});

describe('slow clients', () => {
  it('stops reading a client that does not read its replies, and drops it past the output limit', async () => {
    // Values sized so that the kernel's socket buffers (at the most they may grow to on this
    // machine) and the output limit together take at most 256 replies: far fewer than the
    // 1024 the proxy may owe before it stops reading.
    const size = Math.ceil((kernelSocketBytes() + OUTPUT) / 256 / KiB) * KiB;
    const value = randomBytes(size);
    await s.principalClient.set('big', value);
    await agentA().direct.set('app|managed-resources|big|1', value);
    const processed = async (r: { info(section: string): Promise<string> }) =>
      Number(/total_commands_processed:(\d+)/.exec(await r.info('stats'))![1]);
    const [p0, a0] = [await processed(s.principalClient), await processed(agentA().direct)];
    const before = await refusals(registry, 'client_output');
    const socket = connect({ host: '127.0.0.1', port: s.proxy.port });
    await new Promise((r) => socket.once('connect', r));
    socket.on('error', () => undefined);
    socket.pause();
    socket.write(AUTH);
    const get = cmd('GET', 'big');
    const agentGet = cmd('GET', 'app|managed-resources|agent-a_big|1');
    // 20000 GETs: far more replies than the kernel and the output limit take together.
    for (let i = 0; i < 10_000; i++) {
      socket.write(get);
      socket.write(agentGet);
    }
    // Past the output limit the proxy gives up on the client, as Redis does. Until then it
    // must hold no more than the limit: holding more without dropping the client fails here.
    let held = 0;
    await until(async () => {
      held = await buffered(registry, 'reply');
      return (await refusals(registry, 'client_output')) > before || held > OUTPUT;
    });
    expect(
      held,
      'unsent replies held past --max-output-bytes without dropping the client',
    ).toBeLessThanOrEqual(OUTPUT);
    await until(() => s.proxy.connections === 0);
    socket.destroy();
    const [p1, a1] = [await processed(s.principalClient), await processed(agentA().direct)];
    // It never had more than its pending-reply window (1024) plus one read's worth in flight,
    // besides the replies that went out: most commands were never even read.
    expect(p1 - p0 + (a1 - a0)).toBeLessThan(4_000);
    await quiet();
  }, 120_000);

  it('drops a pub/sub client that does not read, as Redis does', async () => {
    const before = await refusals(registry, 'pubsub_output');
    const socket = connect({ host: '127.0.0.1', port: s.proxy.port });
    await new Promise((r) => socket.once('connect', r));
    let answered = '';
    const confirmed = new Promise<void>((r) =>
      socket.on('data', (d: Buffer) => {
        answered += d.toString('latin1');
        if (answered.endsWith('$5\r\nflood\r\n:1\r\n')) r();
      }),
    );
    socket.write(Buffer.concat([AUTH, cmd('SUBSCRIBE', 'flood')]));
    await confirmed;
    socket.removeAllListeners('data');
    socket.pause();
    const closed = new Promise((r) => socket.once('close', r));
    socket.on('error', () => undefined);
    // Publish until the proxy drops it. The kernel's socket buffers take what they can first
    // (up to their ceiling on this machine); past that and the limit, not dropping it fails.
    const payload = randomBytes(64 * KiB);
    const bound = 2 * (kernelSocketBytes() + PUBSUB_OUTPUT);
    let published = 0;
    while ((await refusals(registry, 'pubsub_output')) === before) {
      if (published > bound)
        expect.fail(
          `${published} bytes published to a subscriber that does not read, and it was not dropped`,
        );
      await s.principalClient.publish('flood', payload);
      published += payload.length;
    }
    socket.resume();
    socket.on('data', () => undefined);
    await closed;
    await quiet();
  }, 120_000);
});
