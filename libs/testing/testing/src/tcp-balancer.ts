import net from 'node:net';

export interface TcpBalancer {
  readonly port: number;
  readonly address: string;
  /** Replaces the backend list (host:port strings). */
  setBackends(backends: string[]): void;
  /** Open client connections (both sides piped). */
  readonly activeConnections: number;
  close(): Promise<void>;
}

/**
 * A layer-4 round-robin balancer standing in for a Kubernetes Service in front of several
 * gateway replicas: each client connection goes to the next backend that accepts, and dies
 * with it. TLS passes through untouched.
 */
export async function startTcpBalancer(backends: string[], host = '127.0.0.1'): Promise<TcpBalancer> {
  let list = [...backends];
  let next = 0;
  const sockets = new Set<net.Socket>();
  const dial = (attempt: number, client: net.Socket) => {
    if (attempt >= list.length || client.destroyed) {
      client.destroy();
      return;
    }
    const target = list[next++ % list.length]!;
    const idx = target.lastIndexOf(':');
    const upstream = net.connect(Number(target.slice(idx + 1)), target.slice(0, idx));
    let connected = false;
    upstream.on('error', () => {
      if (!connected) dial(attempt + 1, client);
      else client.destroy();
    });
    upstream.once('connect', () => {
      connected = true;
      sockets.add(upstream);
      upstream.on('close', () => {
        sockets.delete(upstream);
        client.destroy();
      });
      client.on('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  };
  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    client.on('close', () => sockets.delete(client));
    dial(0, client);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    address: `${host}:${port}`,
    setBackends(b) {
      list = [...b];
    },
    get activeConnections() {
      return sockets.size;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
