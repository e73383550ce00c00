import { connect } from 'node:net';
import { encodeCommand } from '@pullplane/resp';
import { createMetricsRegistry } from '@pullplane/telemetry';
import type { LogicalStream } from '@pullplane/tunnel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buffered as bufferedBytes,
  kernelSocketBytes,
  rawExchange,
  refusals as refusalCount,
  type Stack,
  startStack,
  until,
  waitFor,
} from './harness.js';

// Small limits so each is reached with little traffic; agent-s never reads what it is sent
// (a stalled agent whose tunnel credit runs out).
const PASSWORD = 's3cret';
const KiB = 1024;
const MiB = 1024 * KiB;
const registry = createMetricsRegistry({ collectDefaultMetrics: false });
const stalled: LogicalStream[] = [];
/** While set, agent-s takes its streams and never reads them; afterwards it ends them at once. */
let stall = true;
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    agents: ['agent-a', 'agent-s'],
    password: PASSWORD,
    handlers: {
      'agent-s': (stream) => {
        if (!stall) {
          stream.destroy();
          return;
        }
        stream.pause();
        stalled.push(stream);
      },
    },
    proxy: {
      registry,
      requestTimeoutMs: 60_000,
      limits: {
        unauthenticatedTimeoutMs: 2_000,
        maxCommandArgs: 100,
        maxBulkLength: 256 * KiB,
        maxCommandBytes: 300 * KiB,
        maxClientInputBytes: 1 * MiB,
        maxBufferedBytes: 8 * MiB,
      },
    },
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const cmd = (...args: Array<string | Buffer>) => encodeCommand(args);
const AUTH = cmd('AUTH', PASSWORD);

const refusals = (limit: string) => refusalCount(registry, limit);
const buffered = (side: 'request' | 'reply') => bufferedBytes(registry, side);

describe('before AUTH', () => {
  const cases: Array<[string, Buffer | string, string, string]> = [
    [
      '11 arguments',
      cmd('AUTH', ...Array(10).fill('x')),
      '-ERR Protocol error: unauthenticated multibulk length (at most 10 arguments before AUTH, --max-unauthenticated-args)\r\n',
      'unauthenticated_args',
    ],
    [
      'an argument over 16 KiB, at its header,',
      '*2\r\n$4\r\nAUTH\r\n$16385\r\n',
      '-ERR Protocol error: unauthenticated bulk length (at most 16384 bytes before AUTH, --max-unauthenticated-bytes)\r\n',
      'unauthenticated_bytes',
    ],
    [
      'ten arguments adding up to more than 16 KiB',
      cmd('AUTH', ...Array(9).fill('x'.repeat(2000))),
      '-ERR Protocol error: unauthenticated bulk length (at most 16384 bytes before AUTH, --max-unauthenticated-bytes)\r\n',
      'unauthenticated_bytes',
    ],
    [
      'a 16 KiB inline command',
      `AUTH ${'x'.repeat(16 * KiB)}\r\n`,
      '-ERR Protocol error: unauthenticated bulk length (at most 16384 bytes before AUTH, --max-unauthenticated-bytes)\r\n',
      'unauthenticated_bytes',
    ],
  ];
  for (const [name, input, answer, limit] of cases) {
    it(`refuses ${name} with a clear error, closes, and counts it`, async () => {
      const before = await refusals(limit);
      const { output, closed } = await rawExchange(s.proxy.port, input, 'close');
      expect(output).toBe(answer);
      expect(closed).toBe(true);
      expect(await refusals(limit)).toBe(before + 1);
    });
  }

  it('lets the whole go-redis handshake through within them, and lifts them after AUTH', async () => {
    const input = Buffer.concat([
      cmd('HELLO', '3', 'AUTH', 'default', PASSWORD, 'SETNAME', 'argocd-application-controller'),
      cmd('MGET', ...Array(20).fill('k')),
      cmd('SET', 'big-after-auth', 'v'.repeat(100 * KiB)),
    ]);
    const { output, closed } = await rawExchange(s.proxy.port, input, { replies: 3 });
    expect(closed).toBe(false);
    expect(output).toMatch(/^%7\r\n/);
    expect(output).toContain(`*20\r\n${'_\r\n'.repeat(20)}`);
    expect(output.endsWith('+OK\r\n')).toBe(true);
  });

  it('closes a connection that does not authenticate in time, and only that one', async () => {
    const before = await refusals('unauthenticated_timeout');
    const authed = connect({ host: '127.0.0.1', port: s.proxy.port });
    const idle = connect({ host: '127.0.0.1', port: s.proxy.port });
    const authedReplies: Buffer[] = [];
    authed.on('data', (d: Buffer) => authedReplies.push(d));
    authed.write(AUTH);
    const idleReplies: Buffer[] = [];
    idle.on('data', (d: Buffer) => idleReplies.push(d));
    // Wrong passwords do not buy it more time: it is closed while still guessing.
    const guessing = setInterval(() => idle.write(cmd('AUTH', 'guess')), 200);
    await new Promise((r) => idle.once('close', r));
    clearInterval(guessing);
    expect(Buffer.concat(idleReplies).toString()).toMatch(/^(-WRONGPASS [^\r]*\r\n)+/);
    expect(Buffer.concat(idleReplies).toString()).toContain(
      '-ERR authentication timed out: a connection must authenticate within 2000 ms (--unauthenticated-timeout)\r\n',
    );
    expect(await refusals('unauthenticated_timeout')).toBe(before + 1);
    // The one that authenticated at the same time is still served after the idle one was closed.
    authed.write(cmd('PING'));
    await waitFor(() => Buffer.concat(authedReplies).toString() === '+OK\r\n+PONG\r\n');
    authed.destroy();
  });

  it('tightens them again after RESET', async () => {
    const input = Buffer.concat([AUTH, cmd('RESET'), cmd('MGET', ...Array(20).fill('k'))]);
    const { output, closed } = await rawExchange(s.proxy.port, input, 'close');
    expect(output).toBe(
      '+OK\r\n+RESET\r\n-ERR Protocol error: unauthenticated multibulk length (at most 10 arguments before AUTH, --max-unauthenticated-args)\r\n',
    );
    expect(closed).toBe(true);
  });
});

describe('after AUTH', () => {
  const cases: Array<[string, Buffer | string, string, string]> = [
    [
      'more arguments than --max-command-args, at the count',
      '*101\r\n',
      '-ERR Protocol error: invalid multibulk length (at most 100 arguments, --max-command-args)\r\n',
      'command_args',
    ],
    [
      'a value over --max-bulk-length, at its header',
      `*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$${256 * KiB + 1}\r\n`,
      `-ERR Protocol error: invalid bulk length (at most ${256 * KiB} bytes, --max-bulk-length)\r\n`,
      'bulk_length',
    ],
    [
      'a command over --max-command-bytes, at the header that takes it over',
      `*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$${200 * KiB}\r\n${'v'.repeat(200 * KiB)}\r\n$${200 * KiB}\r\n`,
      `-ERR Protocol error: command too large (at most ${300 * KiB} bytes, --max-command-bytes)\r\n`,
      'command_bytes',
    ],
  ];
  for (const [name, input, answer, limit] of cases) {
    it(`refuses ${name}, closes, and counts it`, async () => {
      const before = await refusals(limit);
      const { output, closed } = await rawExchange(
        s.proxy.port,
        Buffer.concat([AUTH, Buffer.from(input)]),
        'close',
      );
      expect(output).toBe(`+OK\r\n${answer}`);
      expect(closed).toBe(true);
      expect(await refusals(limit)).toBe(before + 1);
    });
  }

  it('stops reading a client whose commands queue toward a stalled agent, and reads on once they move', async () => {
    const socket = connect({ host: '127.0.0.1', port: s.proxy.port });
    await new Promise((r) => socket.once('connect', r));
    socket.on('error', () => undefined);
    const replies: Buffer[] = [];
    socket.on('data', (d: Buffer) => replies.push(d));
    // Authenticated before the flood: writing it blocks this process (the proxy's too) for a
    // while on a busy machine, and the AUTH clock must not run out meanwhile.
    socket.write(AUTH);
    await until(() => Buffer.concat(replies).toString() === '+OK\r\n');
    // SETs of 128 KiB for the stalled agent: its 256 KiB of tunnel credit is gone after two,
    // the rest would pile up in the proxy if it kept reading. Sent: what the kernel's socket
    // buffers can hold at most on this machine, the proxy's 1 MiB, and 32 MiB more that only
    // the client can be left holding.
    const value = Buffer.alloc(128 * KiB, 0x61);
    const n = Math.ceil((kernelSocketBytes() + 2 * MiB + 32 * MiB) / value.length);
    for (let i = 0; i < n; i++) socket.write(cmd('SET', `app|managed-resources|agent-s_app${i}|1.gz`, value));
    await until(() => stalled.length === 1);
    // Reading has stopped: the proxy holds about its limit, the rest waits in the client.
    await until(async () => (await buffered('request')) >= 1 * MiB);
    // A command on another connection is answered: the proxy's loop has turned since, and
    // this client's commands still do not get in.
    const other = s.client();
    expect(await other.ping()).toBe('PONG');
    other.disconnect();
    expect(await buffered('request')).toBeLessThan(1 * MiB + 300 * KiB + 256 * KiB);
    expect(socket.writableLength).toBeGreaterThan(32 * MiB);
    // The agent's stream ends: every command is answered (with an error), and reading resumes.
    stall = false;
    stalled[0]!.destroy();
    await until(() => Buffer.concat(replies).toString().split('\r\n').length - 1 >= n + 1);
    const lines = Buffer.concat(replies).toString().split('\r\n');
    expect(lines[0]).toBe('+OK');
    expect(lines.slice(1, n + 1).every((l) => l.startsWith('-ERR agent agent-s'))).toBe(true);
    expect(socket.writableLength).toBe(0);
    socket.destroy();
    await until(() => s.proxy.connections === 0);
    await until(async () => (await buffered('request')) === 0);
  }, 120_000);

  it('closes a client whose unread replies would take the buffers past --max-buffered-bytes; others carry on', async () => {
    await s.principalClient.set('big-reply', Buffer.alloc(400 * KiB, 0x62));
    const before = await refusals('buffer_budget');
    const socket = connect({ host: '127.0.0.1', port: s.proxy.port });
    await new Promise((r) => socket.once('connect', r));
    socket.on('error', () => undefined);
    const closed = new Promise((r) => socket.once('close', r));
    socket.pause();
    // Replies of 400 KiB it does not read: what the kernel's socket buffers can hold at most
    // on this machine, and twice the budget of 8 MiB on top.
    const n = Math.ceil((kernelSocketBytes() + 16 * MiB) / (400 * KiB));
    socket.write(Buffer.concat([AUTH, ...Array(n).fill(cmd('GET', 'big-reply'))]));
    await until(async () => (await refusals('buffer_budget')) === before + 1);
    // The client sees it once it reads again.
    socket.resume();
    await closed;
    const other = s.client();
    expect(await other.set('still-served', '1')).toBe('OK');
    await until(async () => (await buffered('reply')) === 0);
  }, 120_000);
});
