import type { PubSubKind, PubSubMessage } from './redis-subscriber.js';

export type PubSubListener = (message: PubSubMessage) => void;

/** What actually subscribes: the principal's subscriber connection, or agent streams. */
export interface SubscriptionSource {
  /** Starts a subscription; resolves once it is live (the source keeps it alive after that). */
  start(kind: PubSubKind, name: Buffer): Promise<void>;
  stop(kind: PubSubKind, name: Buffer): void;
}

interface Entry {
  listeners: Set<PubSubListener>;
  ready: Promise<void>;
}

const key = (kind: PubSubKind, name: Buffer) => `${kind === 'channel' ? 'c' : 'p'}${name.toString('latin1')}`;

/**
 * Shares one upstream subscription per channel or pattern among every client connection of
 * this proxy that asked for it: the first listener starts it, the last one leaving stops it.
 */
export class SubscriptionHub {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly source: SubscriptionSource) {}

  get size(): number {
    return this.entries.size;
  }

  add(kind: PubSubKind, name: Buffer, listener: PubSubListener): Promise<void> {
    const k = key(kind, name);
    let entry = this.entries.get(k);
    if (entry === undefined) {
      entry = { listeners: new Set(), ready: this.source.start(kind, name) };
      entry.ready.catch(() => undefined);
      this.entries.set(k, entry);
    }
    entry.listeners.add(listener);
    return entry.ready;
  }

  remove(kind: PubSubKind, name: Buffer, listener: PubSubListener): void {
    const k = key(kind, name);
    const entry = this.entries.get(k);
    if (entry === undefined || !entry.listeners.delete(listener)) return;
    if (entry.listeners.size > 0) return;
    this.entries.delete(k);
    this.source.stop(kind, name);
  }

  /** Delivers a message to the listeners of its channel (message) or pattern (pmessage). */
  dispatch(message: PubSubMessage): void {
    const entry =
      message.kind === 'message'
        ? this.entries.get(key('channel', message.channel))
        : this.entries.get(key('pattern', message.pattern));
    if (entry === undefined) return;
    for (const listener of entry.listeners) listener(message);
  }
}
