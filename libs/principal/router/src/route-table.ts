import type { Bus, PresenceRecord } from '@pullplane/bus';
import type { Logger } from 'pino';

/** How a route the store no longer has left the table. */
export type DroppedHow = 'reconcile' | 'route-failed';

export interface RouteTableOptions {
  bus: Bus;
  logger: Logger;
  /** How often the whole table is compared with the store; 0: never. */
  reconcileIntervalMs: number;
  onDropped?: (agent: string, how: DroppedHow) => void;
  /** After each reconciliation (the router drops links to gateways no route names). */
  onReconciled?: () => void;
}

/** Where a route points: enough to tell whether the table still holds the one that failed. */
export interface RouteRef {
  address: string;
  sessionId: string;
}

/**
 * Which gateway holds which agent, as this proxy replica sees it: fed by the presence watch, and
 * made to converge with the store without it. A record that expires by the bucket's TTL produces
 * no watch event (NATS KV reports puts and deletes, not expiries), so a dead gateway's routes
 * would stay forever; two things remove them: a route that failed while the store has no record
 * (`forget`), and a periodic comparison of the whole table with the store (`reconcile`), which
 * bounds how long a dead route can cost to one interval.
 */
export class RouteTable {
  private readonly routes = new Map<string, PresenceRecord>();
  /** Agents the watch changed while a reconciliation read the store: the watch is newer. */
  private touched: Set<string> | undefined;
  private stopWatch: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reconciling: Promise<number> | undefined;

  constructor(private readonly opts: RouteTableOptions) {}

  async start(): Promise<void> {
    this.stopWatch = await this.opts.bus.presence.watch((ev) => {
      if (ev.type === 'put') this.routes.set(ev.record.agent, ev.record);
      else this.routes.delete(ev.agent);
      this.touched?.add(ev.type === 'put' ? ev.record.agent : ev.agent);
    });
    if (this.opts.reconcileIntervalMs > 0) {
      this.timer = setInterval(() => {
        this.reconcile().catch((err: unknown) =>
          // NATS away: the table keeps its last view (the data path never goes through NATS).
          this.opts.logger.warn(
            { err: String(err) },
            'could not compare routes with presence; retried later',
          ),
        );
      }, this.opts.reconcileIntervalMs);
      this.timer.unref();
    }
  }

  stop(): void {
    this.stopWatch?.();
    clearInterval(this.timer);
  }

  get(agent: string): PresenceRecord | undefined {
    return this.routes.get(agent);
  }

  /** A record read from the store itself (a route that failed, looked up again). */
  set(agent: string, record: PresenceRecord): void {
    this.routes.set(agent, record);
    this.touched?.add(agent);
  }

  values(): PresenceRecord[] {
    return [...this.routes.values()];
  }

  /** Gateway addresses some route points to. */
  addresses(): Set<string> {
    return new Set([...this.routes.values()].map((r) => r.internalAddress));
  }

  /**
   * The route `failed` did not take the request and the store has no record of the agent: the
   * route is dead (its record expired). Dropped unless the watch replaced it meanwhile.
   */
  forget(agent: string, failed: RouteRef): void {
    const r = this.routes.get(agent);
    if (!r || r.internalAddress !== failed.address || r.sessionId !== failed.sessionId) return;
    this.routes.delete(agent);
    this.opts.logger.info(
      { agent, gateway: failed.address },
      'route failed and presence has no record; dropped',
    );
    this.opts.onDropped?.(agent, 'route-failed');
  }

  /**
   * Makes the table what the store holds: routes it has no record of are dropped, routes it
   * holds otherwise are replaced, and routes only it has are added, except for agents the watch
   * changed while the store was read (the watch saw a later state). Returns the routes dropped.
   */
  reconcile(): Promise<number> {
    this.reconciling ??= this.compare().finally(() => {
      this.reconciling = undefined;
    });
    return this.reconciling;
  }

  private async compare(): Promise<number> {
    const touched = new Set<string>();
    this.touched = touched;
    let stored: PresenceRecord[];
    try {
      stored = await this.opts.bus.presence.list();
    } finally {
      this.touched = undefined;
    }
    const byAgent = new Map(stored.map((r) => [r.agent, r]));
    let dropped = 0;
    for (const [agent, r] of [...this.routes]) {
      if (touched.has(agent)) continue;
      const current = byAgent.get(agent);
      if (!current) {
        this.routes.delete(agent);
        dropped++;
        this.opts.onDropped?.(agent, 'reconcile');
      } else if (current.sessionId !== r.sessionId || current.internalAddress !== r.internalAddress) {
        this.routes.set(agent, current);
      }
    }
    for (const [agent, r] of byAgent)
      if (!touched.has(agent) && !this.routes.has(agent)) this.routes.set(agent, r);
    if (dropped > 0) this.opts.logger.info({ dropped }, 'routes without presence dropped (expired records)');
    this.opts.onReconciled?.();
    return dropped;
  }
}
