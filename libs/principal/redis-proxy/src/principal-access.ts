import type { RespProtocol, RespValue } from '@pullplane/resp';
import { type Command, needsOwnConnection } from './commands/table.js';
import { ReplyText } from './errors.js';
import { type ClientState, type Expectation, type LinkOwner, PrincipalLink } from './principal-link.js';
import type { SharedPrincipalLinks } from './principal-pool.js';
import type { ProxyContext } from './proxy-context.js';
import type { ReplyQueue, Slot } from './reply-queue.js';

export interface AccessHooks {
  state(): ClientState;
  /** Replies arrived: drain and write the queue. */
  flush(): void;
  /** Nothing is owed by the principal any more (a held command may go now). */
  idle(): void;
  /** The connection's own principal connection died (its transaction state with it). */
  dedicatedLost(reason: string): void;
}

/**
 * Which principal connection a client connection's commands use: the replica's shared one
 * while the client is stateless, its own once it needs state. Switching waits until nothing
 * is owed on the previous connection (the caller holds commands meanwhile), so two commands
 * of one client never run in an order other than the one they were sent in.
 */
export class PrincipalAccess implements LinkOwner {
  /** Expectations of this client not yet answered, on any link. */
  outstanding = 0;
  private dedicated: PrincipalLink | undefined;
  private ownLink = false;
  private downUntil = 0;
  private failure = '';

  constructor(
    readonly queue: ReplyQueue,
    private readonly ctx: ProxyContext,
    private readonly shared: SharedPrincipalLinks,
    private readonly hooks: AccessHooks,
  ) {}

  get usesOwnLink(): boolean {
    return this.ownLink;
  }

  /** The client's own link, if it has one now (replays of its state go there). */
  get own(): PrincipalLink | undefined {
    return this.dedicated;
  }

  flushReplies(): void {
    this.hooks.flush();
  }

  answered(): void {
    if (--this.outstanding === 0) this.hooks.idle();
  }

  /** Whether the command must wait for what is owed before it may run (see the class comment). */
  mustWait(command: Command | undefined, args: readonly Buffer[]): boolean {
    if (this.outstanding === 0 || this.ownLink || command === undefined) return false;
    return command.waitsForPrincipal || needsOwnConnection(command, args);
  }

  /** From now on, this client has its own principal connection. */
  takeOwnLink(): void {
    this.ownLink = true;
  }

  /** The link for the next command, or the reason it is unavailable. */
  link(protocol: RespProtocol): PrincipalLink | string {
    if (!this.ownLink)
      return this.shared.get(protocol) ?? ReplyText.principalUnavailable(this.shared.lastFailure);
    if (this.dedicated) return this.dedicated;
    if (Date.now() < this.downUntil) return ReplyText.principalUnavailable(this.failure);
    const link = new PrincipalLink(
      {
        endpoint: this.ctx.principal,
        logger: this.ctx.logger,
        maxBulkLength: this.ctx.limits.maxBulkLength * 2,
        shared: false,
        onClosed: (reason) => {
          if (this.dedicated !== link) return;
          this.dedicated = undefined;
          this.failure = reason;
          this.downUntil = Date.now() + 1_000;
          this.hooks.dedicatedLost(reason);
        },
      },
      this.hooks.state(),
    );
    this.dedicated = link;
    return link;
  }

  /** Sends a command; false when the caller should pause until the link drains. */
  send(link: PrincipalLink, command: Buffer | Buffer[], e: Expectation): boolean {
    if (e.kind !== 'discard') this.outstanding++;
    return link.send(command, e);
  }

  /** A run of replies that go straight to the client: joins the tail run when it can. */
  forward(link: PrincipalLink, command: Buffer | Buffer[], observe?: (value: RespValue) => void): boolean {
    const run = observe === undefined ? this.queue.tailRun() : undefined;
    if (run && link.tailIs(run)) {
      this.queue.extend(run);
      this.outstanding++;
      return link.sendMore(command);
    }
    const slot: Slot = this.queue.defer(1, observe === undefined);
    return this.send(
      link,
      command,
      observe
        ? { kind: 'slot', owner: this, slot, count: 1, observe }
        : { kind: 'slot', owner: this, slot, count: 1 },
    );
  }

  close(): void {
    this.dedicated?.destroy();
    this.dedicated = undefined;
  }
}
