import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Largest `/bytes/<n>` answer (1 GiB): enough for any download test, bounded. */
const MAX_BYTES = 1024 * 1024 * 1024;
const PATTERN = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 31 + 7) & 0xff));

/** The byte at `offset` of every `/bytes/<n>` answer (a fixed pattern tests can check). */
export function patternByte(offset: number): number {
  return PATTERN[offset % PATTERN.length]!;
}

export interface PodHttpIdentity {
  namespace: string;
  pod: string;
  port: number;
}

function handle(id: PodHttpIdentity, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://pod');
  const headers = { 'X-Pod-Name': id.pod, 'X-Pod-Namespace': id.namespace };
  const text = (code: number, body: string) => {
    res.writeHead(code, {
      ...headers,
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
    });
    res.end(body);
  };
  const bytes = /^\/bytes\/(\d+)$/.exec(url.pathname);
  if (req.method === 'GET' && url.pathname === '/')
    text(200, `Hello from ${id.pod} in ${id.namespace} (port ${id.port})\n`);
  else if (req.method === 'GET' && url.pathname === '/healthz') text(200, 'ok\n');
  else if (req.method === 'GET' && bytes) {
    const total = Number(bytes[1]);
    if (total > MAX_BYTES) {
      text(400, `at most ${MAX_BYTES} bytes\n`);
      return;
    }
    res.writeHead(200, {
      ...headers,
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(total),
    });
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        const n = Math.min(PATTERN.length - (sent % PATTERN.length), total - sent);
        const chunk = PATTERN.subarray(sent % PATTERN.length, (sent % PATTERN.length) + n);
        sent += n;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  } else if (req.method === 'POST' && url.pathname === '/echo') {
    res.writeHead(200, {
      ...headers,
      'Content-Type': req.headers['content-type'] ?? 'application/octet-stream',
    });
    req.pipe(res);
  } else text(404, 'not found\n');
}

/**
 * The small HTTP server every fake pod runs on each TCP port its containers declare: `GET /`
 * (a greeting naming the pod), `/healthz`, `/bytes/<n>` (n bytes of a fixed pattern, streamed) and
 * `POST /echo`. A real listener on 127.0.0.1, started on first use.
 */
export class PodHttpServers {
  private readonly servers = new Map<string, Promise<{ server: Server; port: number }>>();

  /** The local port serving `id` (keyed by pod uid and port). */
  async address(uid: string, id: PodHttpIdentity): Promise<number> {
    const key = `${uid}/${id.port}`;
    let entry = this.servers.get(key);
    if (!entry) {
      entry = new Promise((resolve, reject) => {
        const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => handle(id, req, res));
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () =>
          resolve({ server, port: (server.address() as AddressInfo).port }),
        );
      });
      this.servers.set(key, entry);
    }
    return (await entry).port;
  }

  /** Stops the servers of a deleted pod. */
  forget(uid: string): void {
    for (const [key, entry] of this.servers) {
      if (!key.startsWith(`${uid}/`)) continue;
      this.servers.delete(key);
      void entry.then(({ server }) => {
        server.close();
        server.closeAllConnections();
      });
    }
  }

  async close(): Promise<void> {
    const all = [...this.servers.values()];
    this.servers.clear();
    await Promise.all(
      all.map((e) =>
        e.then(
          ({ server }) =>
            new Promise<void>((resolve) => {
              server.close(() => resolve());
              server.closeAllConnections();
            }),
          () => {},
        ),
      ),
    );
  }
}
