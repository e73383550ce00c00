import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, freePortRange, freePorts } from '../src/index.js';

const held: Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function listen(port: number): Promise<void> {
  const server = createServer();
  held.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => resolve());
  });
}

describe('freePort', () => {
  it("hands out ports below the kernel's ephemeral range, from this worker's slice", async () => {
    const ephemeralLow = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    );
    const range = freePortRange();
    expect(range).toBeDefined();
    expect(range!.high).toBeLessThan(ephemeralLow);
    for (const port of await freePorts(20)) {
      expect(port).toBeGreaterThanOrEqual(range!.low);
      expect(port).toBeLessThanOrEqual(range!.high);
    }
  });

  it('never hands out the same port twice, and each one can be listened on', async () => {
    const ports = await freePorts(50);
    expect(new Set(ports).size).toBe(50);
    for (const port of ports) await listen(port);
  });

  it('skips a port something is listening on', async () => {
    const first = await freePort();
    // Ports are walked in order: the next candidate is first + 1 (or the slice's start).
    const range = freePortRange()!;
    const next = first === range.high ? range.low : first + 1;
    await listen(next);
    const got = await freePort();
    expect(got).not.toBe(next);
    await listen(got);
  });
});
