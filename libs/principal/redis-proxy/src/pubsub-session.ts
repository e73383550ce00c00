import type { PubSubKind, PubSubListener, PubSubMessage, SubscriptionHub } from '@pullplane/redis-common';
import { encode, type RespProtocol, type RespValue, resp } from '@pullplane/resp';
import type { AgentOpener } from './agent-call.js';
import { ReplyText } from './errors.js';
import type { KeyRouter } from './key-routing.js';

export interface PubSubHubs {
  principal: SubscriptionHub;
  agents: SubscriptionHub;
  keys: KeyRouter;
  opener: AgentOpener;
}

interface Held {
  name: Buffer;
  hub: SubscriptionHub;
}

const TITLES = {
  channel: { sub: 'subscribe', unsub: 'unsubscribe' },
  pattern: { sub: 'psubscribe', unsub: 'punsubscribe' },
} as const;

/** Pub/sub frames (confirmations, messages): RESP3 pushes, or the arrays RESP2 uses. */
export function pushFrame(items: RespValue[], protocol: RespProtocol): Buffer {
  return encode(resp.push(items), { protocol });
}

export interface SubscribeResult {
  /** One confirmation per name, with the subscription count after it, as Redis sends them. */
  replies: Buffer[];
  /** Settles when every new subscription is live (agents that are away do not hold it up). */
  live: Promise<void>;
}

/**
 * One client connection's channels and patterns, across the principal Redis and agents. The
 * proxy answers confirmations itself, so counts cover both kinds of channels; the actual
 * subscriptions are shared per proxy by the hubs.
 */
export class PubSubSession {
  private readonly held = { channel: new Map<string, Held>(), pattern: new Map<string, Held>() };
  private readonly listener: PubSubListener;

  constructor(
    private readonly hubs: PubSubHubs,
    deliver: (message: PubSubMessage) => void,
  ) {
    this.listener = deliver;
  }

  get count(): number {
    return this.held.channel.size + this.held.pattern.size;
  }

  /** Subscribes to every name, or to none and answers an error when one is refused. */
  subscribe(kind: PubSubKind, names: Buffer[], protocol: RespProtocol): SubscribeResult | string {
    const routes = names.map((n) => this.hubs.keys.route(n));
    for (const r of routes) if (r.kind === 'invalid') return ReplyText.invalidAgentKey(r.reason);
    const replies: Buffer[] = [];
    const waits: Promise<void>[] = [];
    for (const [i, name] of names.entries()) {
      const k = name.toString('latin1');
      const map = this.held[kind];
      if (!map.has(k)) {
        const route = routes[i]!;
        const hub = route.kind === 'agent' ? this.hubs.agents : this.hubs.principal;
        map.set(k, { name, hub });
        const ready = hub.add(kind, name, this.listener);
        // An agent that is away gets the subscription when it connects; do not wait for that.
        if (route.kind !== 'agent' || this.hubs.opener.lookup(route.agent) !== undefined) waits.push(ready);
      }
      replies.push(
        pushFrame([resp.bulk(TITLES[kind].sub), resp.bulk(name), resp.integer(this.count)], protocol),
      );
    }
    return { replies, live: Promise.all(waits).then(() => undefined) };
  }

  /** Unsubscribes the names (all of this kind when empty); one confirmation each. */
  unsubscribe(kind: PubSubKind, names: Buffer[], protocol: RespProtocol): Buffer[] {
    const map = this.held[kind];
    const targets = names.length > 0 ? names : [...map.values()].map((h) => h.name);
    const title = resp.bulk(TITLES[kind].unsub);
    if (targets.length === 0)
      return [pushFrame([title, resp.bulk(null), resp.integer(this.count)], protocol)];
    return targets.map((name) => {
      const k = name.toString('latin1');
      const held = map.get(k);
      if (held) {
        map.delete(k);
        held.hub.remove(kind, held.name, this.listener);
      }
      return pushFrame([title, resp.bulk(name), resp.integer(this.count)], protocol);
    });
  }

  /** Drops everything (RESET, or the client went away). */
  clear(): void {
    for (const kind of ['channel', 'pattern'] as const) {
      for (const held of this.held[kind].values()) held.hub.remove(kind, held.name, this.listener);
      this.held[kind].clear();
    }
  }

  /** A message for this session, as the client should see it. */
  static frame(message: PubSubMessage, protocol: RespProtocol): Buffer {
    return message.kind === 'message'
      ? pushFrame([resp.bulk('message'), resp.bulk(message.channel), resp.bulk(message.payload)], protocol)
      : pushFrame(
          [
            resp.bulk('pmessage'),
            resp.bulk(message.pattern),
            resp.bulk(message.channel),
            resp.bulk(message.payload),
          ],
          protocol,
        );
  }
}
