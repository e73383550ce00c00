import type { RedisEndpoint } from '@pullplane/redis-common';
import type { RespProtocol } from '@pullplane/resp';
import type { Logger } from 'pino';
import { PrincipalLink } from './principal-link.js';

/**
 * The principal Redis connections shared by every client connection of this replica that is
 * in the default state (database 0, no transaction, nothing blocking): one per protocol, the
 * way twemproxy multiplexes clients onto one server connection.
 */
export class SharedPrincipalLinks {
  private readonly links = new Map<RespProtocol, PrincipalLink>();
  private downUntil = 0;
  private failure = '';

  constructor(private readonly opts: { endpoint: RedisEndpoint; logger: Logger; maxBulkLength: number }) {}

  /** Why the principal Redis is unreachable, when get() returned undefined. */
  get lastFailure(): string {
    return this.failure;
  }

  /** The shared link for the protocol; undefined for a second after one failed (no hammering). */
  get(protocol: RespProtocol): PrincipalLink | undefined {
    const existing = this.links.get(protocol);
    if (existing !== undefined) return existing;
    if (Date.now() < this.downUntil) return undefined;
    const link = new PrincipalLink(
      {
        endpoint: this.opts.endpoint,
        logger: this.opts.logger,
        maxBulkLength: this.opts.maxBulkLength,
        shared: true,
        onClosed: (reason) => {
          if (this.links.get(protocol) !== link) return;
          this.links.delete(protocol);
          this.failure = reason;
          this.downUntil = Date.now() + 1_000;
          this.opts.logger.info({ reason }, 'shared principal redis connection lost');
        },
      },
      { protocol, db: 0, name: undefined },
    );
    this.links.set(protocol, link);
    return link;
  }

  close(): void {
    for (const link of this.links.values()) link.destroy('proxy closing');
    this.links.clear();
  }
}
