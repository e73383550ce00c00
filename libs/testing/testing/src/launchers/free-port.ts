import { type AddressInfo, createServer, type Server } from 'node:net';

/**
 * Asks the kernel for an unused TCP port by binding port 0 and releasing it.
 * There is a small window in which another process could take the port; callers that
 * spawn servers retry on "address in use" rather than trusting this blindly.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not determine a free port'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}

/**
 * `count` distinct unused ports: each is held until all are found, so two asked for together
 * (a server's client and monitor ports) are never the same one handed out twice.
 */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const held: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      server.unref();
      held.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host, port: 0, exclusive: true }, () => resolve());
      });
    }
    return held.map((s) => (s.address() as AddressInfo).port);
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
}
