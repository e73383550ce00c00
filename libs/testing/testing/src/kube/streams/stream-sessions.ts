import type { TerminalSize } from './process-io.js';

/** One exec, attach or port-forward session the fake API server served (for assertions). */
export interface StreamSession {
  readonly id: number;
  readonly kind: 'exec' | 'attach' | 'portforward';
  readonly namespace: string;
  readonly pod: string;
  /** The container (exec, attach). */
  readonly container?: string | undefined;
  /** The command (exec). */
  readonly command?: readonly string[] | undefined;
  /** The user the request acted as (after impersonation). */
  readonly user: string;
  /** How the client connected. */
  readonly transport: 'websocket' | 'spdy';
  /**
   * The negotiated subprotocol: the WebSocket one (`v5.channel.k8s.io`, `SPDY/3.1+portforward.k8s.io`
   * for port-forward tunnelled in WebSocket, `` when the client asked for none) or SPDY's
   * X-Stream-Protocol-Version (`v4.channel.k8s.io`, `portforward.k8s.io`).
   */
  readonly protocol: string;
  readonly tty: boolean;
  /** Terminal sizes received on the resize channel, in order. */
  readonly resizes: TerminalSize[];
  /** Ports requested (port-forward over the WebSocket channel protocol) or seen on streams (SPDY). */
  readonly ports: number[];
  /** Port-forward connections served. */
  connections: number;
  /** Exit status of the command (exec), once it ended. */
  exitCode?: number | undefined;
  /** Why the session failed (the Status message sent to the client), if it did. */
  error?: string | undefined;
  readonly startedAt: Date;
  endedAt?: Date | undefined;
}

export type NewSession = Omit<StreamSession, 'id' | 'resizes' | 'ports' | 'connections' | 'startedAt'> & {
  ports?: number[] | undefined;
};

/** The sessions of one fake API server: every one (bounded) and the open ones. */
export class StreamSessions {
  private readonly all: StreamSession[] = [];
  private readonly open = new Set<StreamSession>();
  private readonly closers = new Set<() => void>();
  private nextId = 1;

  constructor(private readonly limit = 1000) {}

  start(init: NewSession): StreamSession {
    const session: StreamSession = {
      ...init,
      id: this.nextId++,
      resizes: [],
      ports: init.ports ?? [],
      connections: 0,
      startedAt: new Date(),
    };
    this.all.push(session);
    if (this.all.length > this.limit) this.all.splice(0, this.all.length - this.limit);
    this.open.add(session);
    return session;
  }

  end(session: StreamSession): void {
    if (!this.open.delete(session)) return;
    session.endedAt = new Date();
  }

  list(): readonly StreamSession[] {
    return this.all;
  }

  activeCount(): number {
    return this.open.size;
  }

  /** Registers how to tear a live connection down when the server closes; returns the unregister. */
  onClose(close: () => void): () => void {
    this.closers.add(close);
    return () => this.closers.delete(close);
  }

  closeAll(): void {
    for (const close of [...this.closers]) close();
    this.closers.clear();
  }
}
