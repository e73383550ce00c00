import type { BackendOptions } from '@pullplane/extension-config';
import { buildConnector, Client, type Dispatcher } from 'undici';
import type { CallDispatcher } from './backend-call.js';

/** undici wants an idle timeout; Argo CD's 0 means none, so the longest Node timers allow. */
const NO_TIMEOUT_MS = 2_147_483_647;

/**
 * One extension backend's kept-alive connections under Argo CD's options: connect timeout,
 * TCP keep-alive probes, idle timeout, and at most `maxIdleConnections` idle. undici's Pool caps
 * all connections rather than the idle ones (a busy backend would queue behind the cap), so
 * each connection here is a Client of its own carrying one request at a time: an idle one is
 * taken newest first, a new one made when none is idle, and one that comes free beyond the cap
 * is closed.
 */
export class BackendPool implements CallDispatcher {
  private readonly idle: Client[] = [];
  private readonly busy = new Set<Client>();
  private retired = false;
  /** One connector for all the pool's connections: they share its TLS session cache. */
  private readonly connector: buildConnector.connector;

  constructor(
    private readonly origin: URL,
    private readonly options: BackendOptions,
  ) {
    this.connector = buildConnector({
      timeout: options.connectionTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelay: options.keepAliveMs,
    });
  }

  /** Connections carrying a request now, and kept idle (what the tests read). */
  get sizes(): { busy: number; idle: number } {
    return { busy: this.busy.size, idle: this.idle.length };
  }

  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const client = this.idle.pop() ?? this.connection();
    this.busy.add(client);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.release(client);
    };
    // Only the callbacks `dispatchCall` gives are passed on (undici's legacy handler shape).
    return client.dispatch(options, {
      onConnect: (abort) => handler.onConnect?.(abort),
      onHeaders: (status, headers, resume, text) =>
        handler.onHeaders?.(status, headers, resume, text) ?? true,
      onData: (chunk) => handler.onData?.(chunk) ?? true,
      onComplete: (trailers) => {
        release();
        handler.onComplete?.(trailers);
      },
      onError: (err) => {
        release();
        handler.onError?.(err);
      },
    });
  }

  /** A replaced map entry: idle connections close now, busy ones when their request ends. */
  retire(): void {
    this.retired = true;
    for (const c of this.idle.splice(0)) ignore(c.close());
  }

  /** The agent stops: every connection ends now. */
  destroy(): void {
    this.retired = true;
    for (const c of [...this.idle.splice(0), ...this.busy]) ignore(c.destroy());
    this.busy.clear();
  }

  private release(client: Client): void {
    if (!this.busy.delete(client)) return;
    if (this.retired || this.idle.length >= this.options.maxIdleConnections) ignore(client.close());
    else this.idle.push(client);
  }

  private connection(): Client {
    const o = this.options;
    const idleMs = o.idleConnectionTimeoutMs > 0 ? o.idleConnectionTimeoutMs : NO_TIMEOUT_MS;
    return new Client(this.origin.origin, {
      pipelining: 1,
      connect: this.connector,
      // A backend's Keep-Alive hint may shorten the idle timeout, never lengthen it.
      keepAliveTimeout: idleMs,
      keepAliveMaxTimeout: idleMs,
    });
  }
}

/** close() and destroy() reject once a connection is already gone: nothing left to do then. */
function ignore(p: Promise<void>): void {
  p.catch(() => undefined);
}
