import * as answer from '../local-commands.js';
import { type CommandSpec, keyRange, NO_KEYS } from './spec.js';

/**
 * Redis' transaction commands. MULTI and WATCH give the client a principal connection of its own;
 * inside MULTI agent keys fail the transaction (see Transaction).
 */
export const TRANSACTIONS_COMMANDS: readonly CommandSpec[] = [
  { name: 'discard', keys: NO_KEYS },
  { name: 'exec', keys: NO_KEYS },
  { name: 'multi', keys: NO_KEYS, ownConnection: true, relay: answer.multi },
  { name: 'unwatch', keys: NO_KEYS },
  { name: 'watch', keys: keyRange(1, -1), ownConnection: true },
];
