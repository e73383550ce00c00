import { connect } from 'node:net';
import { encodeCommand } from '@pullplane/resp';
import { createMetricsRegistry } from '@pullplane/telemetry';
import type { LogicalStream } from '@pullplane/tunnel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange, refusals, type Stack, startStack, waitFor } from './harness.js';

// The proxy's caps on clients and on what agents send back, each reached with little traffic:
// two clients at most, 1 KiB inline commands, 2 KiB values (so agent replies up to 4 KiB).
// agent-h is hostile: it answers every command on its pipeline with a value of the size the
// test sets, whatever was asked.
const KiB = 1024;
const registry = createMetricsRegistry({ collectDefaultMetrics: false });
let replySize = 0;
let s: Stack;
beforeAll(async () => {
  s = await startStack({
    agents: ['agent-a', 'agent-h'],
    handlers: {
      'agent-h': (stream: LogicalStream) => {
        stream.respond(200);
        stream.on('data', () => stream.write(`$${replySize}\r\n${'x'.repeat(replySize)}\r\n`));
        stream.on('end', () => stream.end());
        stream.on('error', () => undefined);
      },
    },
    proxy: {
      registry,
      maxClients: 2,
      // Only a client hanging up ends a closed connection here (the drop timer is out of reach).
      limits: { maxInlineLength: 1 * KiB, maxBulkLength: 2 * KiB, closeGraceMs: 10 * 60_000 },
    },
  });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const cmd = (...args: string[]) => encodeCommand(args);

/** A connection the proxy has answered a PING on (so it counts as one of its clients). */
async function client(): Promise<{ close(): void; closed: Promise<void> }> {
  const socket = connect({ host: '127.0.0.1', port: s.proxy.port });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const answered = new Promise<string>((r) => socket.once('data', (d: Buffer) => r(d.toString())));
  socket.write(cmd('PING'));
  expect(await answered).toBe('+PONG\r\n');
  return { close: () => socket.destroy(), closed };
}

describe('maxClients', () => {
  it('refuses a connection past the cap with Redis’ error, counts it, and takes one again once a client leaves', async () => {
    await waitFor(() => s.proxy.connections === 0, 10_000);
    const before = await refusals(registry, 'max_clients');
    const [one, two] = [await client(), await client()];
    const third = await rawExchange(s.proxy.port, cmd('PING'), 'close');
    expect(third).toMatchObject({ output: '-ERR max number of clients reached\r\n', closed: true });
    expect(await refusals(registry, 'max_clients')).toBe(before + 1);
    one.close();
    await one.closed;
    await waitFor(() => s.proxy.connections === 1, 10_000);
    expect((await rawExchange(s.proxy.port, cmd('PING'), { replies: 1 })).output).toBe('+PONG\r\n');
    two.close();
    await waitFor(() => s.proxy.connections === 0, 10_000);
  });
});

describe('inline commands', () => {
  it('serves one within --max-inline-length', async () => {
    const arg = 'y'.repeat(900);
    expect((await rawExchange(s.proxy.port, `ECHO ${arg}\r\n`, { replies: 1 })).output).toBe(
      `$${arg.length}\r\n${arg}\r\n`,
    );
  });

  it('refuses a longer one with a protocol error, closes, and counts it', async () => {
    const before = await refusals(registry, 'inline_length');
    const { output, closed } = await rawExchange(s.proxy.port, `ECHO ${'y'.repeat(2 * KiB)}\r\n`, 'close');
    expect(output).toMatch(/^-ERR Protocol error: [^\r\n]+\r\n$/);
    expect(closed).toBe(true);
    expect(await refusals(registry, 'inline_length')).toBe(before + 1);
  });

  it('a connection closed after a protocol error is gone once the client hangs up', async () => {
    const { closed } = await rawExchange(s.proxy.port, `ECHO ${'y'.repeat(2 * KiB)}\r\n`, 'close');
    expect(closed).toBe(true);
    // The proxy stopped reading its commands; it must still read the client's FIN.
    await waitFor(() => s.proxy.connections === 0, 20_000);
  });
});

describe('agent reply cap (twice --max-bulk-length)', () => {
  it('passes an agent reply within the cap, even past --max-bulk-length', async () => {
    replySize = 3 * KiB;
    const c = s.client();
    expect((await c.get('app|managed-resources|agent-h_a|1'))?.length).toBe(3 * KiB);
    c.disconnect();
  });

  it('answers an error for a reply past the cap instead of passing it on, and the client carries on', async () => {
    replySize = 5 * KiB;
    const c = s.client();
    await expect(c.get('app|managed-resources|agent-h_b|1')).rejects.toThrow(
      `agent agent-h reply exceeds ${4 * KiB} bytes`,
    );
    // The same connection is still served, by the principal and by a well-behaved agent.
    expect(await c.ping()).toBe('PONG');
    await c.set('app|managed-resources|agent-a_c|1', 'fine');
    expect(await c.get('app|managed-resources|agent-a_c|1')).toBe('fine');
    c.disconnect();
  });
});
