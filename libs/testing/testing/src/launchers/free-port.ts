import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Unused TCP ports for servers a test starts.
 *
 * Port 0 would hand out a port from the kernel's ephemeral range, the range every outgoing
 * connection takes its source port from: between the check and the server's bind, a client
 * connecting anywhere on the machine (another test file's, in another worker) can take it, and the
 * server fails with EADDRINUSE (seen in CI). The kernel hands out nothing below that range on
 * its own, so ports come from there instead: each process walks its own slice (by vitest worker,
 * else by pid) in order, hands a port out again only after walking the whole slice (about 1,400
 * ports on Linux's default range), and skips any port it cannot bind.
 */
const LOWEST = 10_000;
const SLICES = 16;

interface Walk {
  low: number;
  size: number;
  next: number;
}
let walk: Walk | null | undefined;

/** The first port of the kernel's ephemeral range (Linux), or undefined where it cannot be read. */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : undefined;
  } catch {
    return undefined;
  }
}

/** This process's slice of the ports below the ephemeral range; null where there is no room. */
function slice(): Walk | null {
  if (walk !== undefined) return walk;
  const high = ephemeralLow();
  const size = high === undefined ? 0 : Math.floor((high - LOWEST) / SLICES);
  if (size < 64) {
    walk = null;
    return walk;
  }
  const worker = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID);
  const index = (Number.isInteger(worker) && worker > 0 ? worker : process.pid) % SLICES;
  const low = LOWEST + index * size;
  walk = { low, size, next: Math.floor(Math.random() * size) };
  return walk;
}

function bindable(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen({ host, port, exclusive: true }, () => {
      const bound = server.address();
      server.close(() => resolve(bound !== null && typeof bound !== 'string' ? bound.port : undefined));
    });
  });
}

/** An unused TCP port on `host`, not handed out by this process since its slice was last walked through. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const w = slice();
  if (w !== null) {
    for (let tries = 0; tries < w.size; tries++) {
      const port = w.low + w.next;
      w.next = (w.next + 1) % w.size;
      if ((await bindable(port, host)) !== undefined) return port;
    }
  }
  // No room below the ephemeral range (or not Linux): the kernel's choice.
  const port = await bindable(0, host);
  if (port === undefined) throw new Error('could not find a free port');
  return port;
}

/** `count` distinct unused ports (a server's client and monitor ports). */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort(host);
    // Only the kernel's choice (no room below its range) or a walk that wrapped can repeat one.
    if (!ports.includes(port)) ports.push(port);
  }
  return ports;
}

/** The range this process's ports come from (for tests of this module); undefined when port 0 is used. */
export function freePortRange(): { low: number; high: number } | undefined {
  const w = slice();
  return w === null ? undefined : { low: w.low, high: w.low + w.size - 1 };
}
