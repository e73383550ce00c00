import { type IncomingHttpHeaders, request } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocket } from 'ws';
import type { FakeKubeApiServer } from '../../src/index.js';
import { SpdySession, type SpdyStream } from '../../src/kube/streams/spdy-session.js';

/** A pod the fake kubelet runs: bound to a node, Running, one container with stdin and port 8080. */
export function runningPod(namespace: string, name: string, container: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: 'node-1',
      containers: [
        { name: 'main', image: 'busybox:1.36', stdin: true, ports: [{ containerPort: 8080 }], ...container },
      ],
    },
    status: { phase: 'Running' },
  };
}

/**
 * A client of the WebSocket channel protocol (what kubectl, client-go and Argo CD's terminal
 * speak): collects every channel's data, sends on channels, half-closes with the v5 signal.
 */
export class ChannelClient {
  readonly received = new Map<number, Buffer[]>();
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly ws: WebSocket,
    readonly base64 = false,
  ) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const channel = isBinary ? data[0]! : data[0]! - 48;
      const payload = isBinary ? data.subarray(1) : Buffer.from(data.subarray(1).toString(), 'base64');
      const list = this.received.get(channel) ?? [];
      list.push(Buffer.from(payload));
      this.received.set(channel, list);
      for (const w of this.waiters) w();
    });
    this.closed = new Promise((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  get protocol(): string {
    return this.ws.protocol;
  }

  text(channel: number): string {
    return Buffer.concat(this.received.get(channel) ?? []).toString('utf8');
  }

  bytes(channel: number): Buffer {
    return Buffer.concat(this.received.get(channel) ?? []);
  }

  /** The error channel's Status, parsed. */
  status(): Record<string, unknown> | undefined {
    const text = this.text(3);
    return text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
  }

  send(channel: number, data: Buffer | string): void {
    const payload = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.base64) this.ws.send(`${String.fromCharCode(48 + channel)}${payload.toString('base64')}`);
    else this.ws.send(Buffer.concat([Buffer.from([channel]), payload]));
  }

  closeChannel(channel: number): void {
    this.ws.send(Buffer.from([255, channel]));
  }

  /** Resolves once `channel`'s text satisfies `test` (or rejects after `timeoutMs`). */
  waitFor(channel: number, test: string | RegExp, timeoutMs = 10_000): Promise<string> {
    const ok = () => {
      const t = this.text(channel);
      return typeof test === 'string' ? t.includes(test) : test.test(t);
    };
    if (ok()) return Promise.resolve(this.text(channel));
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!ok()) return;
        cleanup();
        resolve(this.text(channel));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new Error(
            `channel ${channel}: ${String(test)} not seen; got ${JSON.stringify(this.text(channel))}`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }
}

export interface UpgradeRefusal {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function wsUrl(server: FakeKubeApiServer, path: string): string {
  return `${server.url.replace(/^http/, 'ws')}${path}`;
}

/** Opens a WebSocket to the fake API server; resolves with the client, or the refusal it got. */
export function openChannels(
  server: FakeKubeApiServer,
  path: string,
  protocols: string[],
  headers: Record<string, string> = {},
  ca?: string,
): Promise<ChannelClient | UpgradeRefusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(server, path), protocols, { headers, ...(ca ? { ca } : {}) });
    ws.once('open', () => resolve(new ChannelClient(ws, ws.protocol.includes('base64'))));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    ws.once('error', reject);
  });
}

export async function channels(
  server: FakeKubeApiServer,
  path: string,
  protocols: string[],
  headers: Record<string, string> = {},
  ca?: string,
) {
  const c = await openChannels(server, path, protocols, headers, ca);
  if (!(c instanceof ChannelClient)) throw new Error(`upgrade refused: ${c.status} ${c.body}`);
  return c;
}

/** A SPDY/3.1 upgrade as client-go's round tripper makes it; resolves with the session or the refusal. */
export function openSpdy(
  server: FakeKubeApiServer,
  path: string,
  protocols: string[],
  headers: Record<string, string> = {},
): Promise<{ session: SpdySession; protocol: string; socket: Socket } | UpgradeRefusal> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.url}${path}`, {
      method: 'POST',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'SPDY/3.1',
        ...(protocols.length > 0 ? { 'X-Stream-Protocol-Version': protocols.join(', ') } : {}),
        ...headers,
      },
    });
    req.once('upgrade', (res, socket, head) => {
      if (head.length > 0) socket.unshift(head);
      const session = new SpdySession(socket, { role: 'client' });
      resolve({ session, protocol: String(res.headers['x-stream-protocol-version'] ?? ''), socket });
    });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.once('error', reject);
    req.end();
  });
}

export async function spdy(server: FakeKubeApiServer, path: string, protocols: string[], headers = {}) {
  const r = await openSpdy(server, path, protocols, headers);
  if (!('session' in r)) throw new Error(`upgrade refused: ${r.status} ${r.body}`);
  return r;
}

/** Everything a readable side delivers until it ends. */
export async function readToEnd(stream: SpdyStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** Opens the streams of an exec as client-go's v4 protocol does, each accepted by the server. */
export async function spdyExecStreams(
  session: SpdySession,
  types: Array<'error' | 'stdin' | 'stdout' | 'stderr' | 'resize'>,
): Promise<Map<string, SpdyStream>> {
  const streams = new Map<string, SpdyStream>();
  for (const type of types) {
    const s = session.openStream({ streamtype: type });
    s.on('error', () => {});
    await s.whenReplied();
    streams.set(type, s);
  }
  return streams;
}
