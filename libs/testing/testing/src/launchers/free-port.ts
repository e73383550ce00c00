import { createServer } from 'node:net';

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
