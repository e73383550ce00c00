import { encodeCommand, errorReply, type RespCommand } from '@pullplane/resp';
import { routeOf } from './command-routing.js';
import type { Command } from './commands/table.js';
import { ReplyText } from './errors.js';
import type { KeyRouter } from './key-routing.js';

export interface TransactionTargets {
  keys: KeyRouter;
  /** Sends the command as received to the client's own principal connection. */
  forward(raw: Buffer | Buffer[]): void;
  /** Sends `command`, answering the client `reply` instead of what the principal answers. */
  replace(command: Buffer, reply: Buffer): void;
  reply(bytes: Buffer): void;
}

/**
 * MULTI … EXEC on the client's own principal connection. Agent keys cannot take part: a
 * command on one is answered with an error and fails the transaction, so EXEC discards it
 * and answers EXECABORT, as Redis does after an error while queueing.
 */
export class Transaction {
  active = false;
  private poisoned = false;

  begin(): void {
    this.active = true;
    this.poisoned = false;
  }

  /** A command was refused while queueing: EXEC will answer EXECABORT. */
  fail(): void {
    if (this.active) this.poisoned = true;
  }

  /** The connection's state is gone (RESET, principal connection lost). */
  abandon(): void {
    this.active = false;
    this.poisoned = false;
  }

  /** Handles a command sent inside MULTI; false for those the connection handles as usual. */
  handle(
    cmd: RespCommand,
    command: Command | undefined,
    raw: Buffer | Buffer[],
    t: TransactionTargets,
  ): boolean {
    switch (cmd.name) {
      case 'exec':
        if (this.poisoned) t.replace(encodeCommand(['DISCARD']), errorReply(ReplyText.execAbort));
        else t.forward(raw);
        this.abandon();
        return true;
      case 'discard':
        t.forward(raw);
        this.abandon();
        return true;
    }
    if (command?.inMulti === 'run') return false;
    if (command?.inMulti === 'refuse') {
      this.poisoned = true;
      t.reply(errorReply(ReplyText.notSupported(`${cmd.name.toUpperCase()} inside MULTI`)));
      return true;
    }
    const route = routeOf(command, cmd.name, cmd.args, t.keys);
    if (route.kind === 'principal') {
      t.forward(raw);
    } else {
      this.poisoned = true;
      t.reply(errorReply(route.kind === 'refused' ? route.message : ReplyText.agentKeyInMulti(cmd.name)));
    }
    return true;
  }
}
