import type { Duplex } from 'node:stream';

export interface RawHttpResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * One keep-alive HTTP/1.1 connection read the way the simplest clients and pooling
 * intermediaries read it: responses strictly in order, each framed by its own head (Content-Length,
 * chunked, or none for HEAD/204/304), whatever bytes follow taken as the next response. What a
 * proxy lets an agent put on the wire shows up here as a response of its own.
 */
export class RawHttpConnection {
  private buf = Buffer.alloc(0);
  private closedWith: Error | undefined;
  private wake: (() => void) | undefined;
  /** Every byte the server sent, in order. */
  received = Buffer.alloc(0);
  /** Resolves when the server closes the connection (or it fails), with what was left unread. */
  readonly closed: Promise<{ unread: Buffer; error?: Error }>;

  constructor(private readonly socket: Duplex) {
    let resolveClosed!: (v: { unread: Buffer; error?: Error }) => void;
    this.closed = new Promise((r) => {
      resolveClosed = r;
    });
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.received = Buffer.concat([this.received, d]);
      this.wake?.();
    });
    const close = (err?: Error) => {
      if (this.closedWith) return;
      this.closedWith = err ?? new Error('the server closed the connection');
      resolveClosed({ unread: this.buf, ...(err ? { error: err } : {}) });
      this.wake?.();
    };
    socket.on('end', () => close());
    socket.on('close', () => close());
    socket.on('error', (err) => close(err));
  }

  send(request: string): void {
    if (!this.closedWith) this.socket.write(request);
  }

  /** The next response in order; rejects when the connection closes before it is whole. */
  async next(opts: { head?: boolean } = {}): Promise<RawHttpResponse> {
    for (;;) {
      const parsed = this.parse(opts.head ?? false);
      if (parsed) return parsed;
      if (this.closedWith)
        throw new Error(
          `connection closed with ${this.buf.length} bytes of an incomplete response: ${this.closedWith.message}`,
        );
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = undefined;
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private parse(head: boolean): RawHttpResponse | undefined {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1]);
    if (!status) throw new Error(`not an HTTP response: ${JSON.stringify(lines[0]?.slice(0, 80))}`);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const i = line.indexOf(':');
      const name = line.slice(0, i).trim().toLowerCase();
      const value = line.slice(i + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const start = end + 4;
    const take = (bodyEnd: number, body: Buffer) => {
      this.buf = this.buf.subarray(bodyEnd);
      return { status, headers, body };
    };
    if (head || status === 204 || status === 304 || status < 200) return take(start, Buffer.alloc(0));
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = [];
      let at = start;
      for (;;) {
        const eol = this.buf.indexOf('\r\n', at);
        if (eol < 0) return undefined;
        const size = Number.parseInt(this.buf.subarray(at, eol).toString('latin1'), 16);
        if (size === 0) {
          if (this.buf.length < eol + 4) return undefined;
          return take(eol + 4, Buffer.concat(parts));
        }
        if (this.buf.length < eol + 2 + size + 2) return undefined;
        parts.push(this.buf.subarray(eol + 2, eol + 2 + size));
        at = eol + 2 + size + 2;
      }
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (this.buf.length < start + length) return undefined;
      return take(start + length, this.buf.subarray(start, start + length));
    }
    // Close-delimited.
    if (!this.closedWith) return undefined;
    return take(this.buf.length, this.buf.subarray(start));
  }
}
