import net, { type AddressInfo } from 'node:net';

export interface SlowHop {
  /** host:port to dial instead of the target. */
  readonly address: string;
  /** Closes the listener and every connection through it. */
  close(): void;
}

/**
 * A TCP hop to `target` (host:port) that passes the target's bytes back at most `chunkBytes`
 * every `everyMs` (what the client sends goes through at once): a link slower than the tunnel
 * behind it, as across a network, so the bytes that wait for it pile up where a test can see.
 */
export async function startSlowHop(
  target: string,
  { chunkBytes = 64 * 1024, everyMs = 1 }: { chunkBytes?: number; everyMs?: number } = {},
): Promise<SlowHop> {
  const colon = target.lastIndexOf(':');
  const host = target.slice(0, colon);
  const port = Number(target.slice(colon + 1));
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    const queue: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const drip = () => {
      timer = undefined;
      const next = queue.shift();
      if (!next) return void upstream.resume();
      if (next.length > chunkBytes) queue.unshift(next.subarray(chunkBytes));
      client.write(next.subarray(0, chunkBytes));
      timer = setTimeout(drip, everyMs);
    };
    upstream.on('data', (c: Buffer) => {
      queue.push(c);
      upstream.pause();
      timer ??= setTimeout(drip, everyMs);
    });
    const close = () => {
      clearTimeout(timer);
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
