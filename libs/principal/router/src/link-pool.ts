import type { GatewayLink } from './gateway-link.js';

/**
 * The links to one gateway: up to `size`, dialled on demand and used in turn. A link that
 * failed or was told to go away is replaced when its turn comes (`dial` is then counted as a
 * re-dial); grpc-js backs the connection itself off while the gateway is unreachable.
 */
export class LinkPool {
  private readonly links: Array<GatewayLink | undefined>;
  private next = 0;

  constructor(
    size: number,
    private readonly dial: (redial: boolean) => GatewayLink,
  ) {
    this.links = new Array<GatewayLink | undefined>(Math.max(1, size)).fill(undefined);
  }

  /** The link for the next stream. */
  pick(): GatewayLink {
    const i = this.next;
    this.next = (i + 1) % this.links.length;
    let link = this.links[i];
    if (!link?.usable) {
      link = this.dial(link !== undefined);
      this.links[i] = link;
    }
    return link;
  }

  /** Links not closed. */
  get open(): GatewayLink[] {
    return this.links.filter((l): l is GatewayLink => l?.usable === true);
  }

  /** Every link dialled and not replaced yet, closed or not. */
  get all(): GatewayLink[] {
    return this.links.filter((l): l is GatewayLink => l !== undefined);
  }
}
