import type { RespValue } from './types.js';

export interface RespCommand {
  /** The command name, ASCII-lowercased (Redis matches names case-insensitively). */
  name: string;
  /** The arguments after the name, as sent. */
  args: Buffer[];
}

const UPPER = /[A-Z]/;

/**
 * Views a decoded value as a command: a non-empty array of non-null bulk strings, which is
 * what a server-mode decoder emits for both multibulk and inline commands.
 */
export function asCommand(value: RespValue): RespCommand | undefined {
  if (value.type !== 'array' || value.value === null || value.value.length === 0) return undefined;
  const args: Buffer[] = [];
  for (const item of value.value) {
    if (item.type !== 'bulk' || item.value === null) return undefined;
    args.push(item.value);
  }
  return commandFromArgs(args);
}

/**
 * Names as sent, folded, found by their bytes: a client sends the same few names over and over,
 * and reading one as a string and folding it cost more than the rest of reading the command.
 * A fixed table of short names (a slot per length and first byte), so made-up names cannot grow it.
 */
const SLOTS = 256;
const MAX_CACHED_LENGTH = 32;
const slotBytes: Array<Buffer | undefined> = new Array(SLOTS).fill(undefined);
const slotNames: string[] = new Array(SLOTS).fill('');

/** A command from what a server-mode decoder's onCommand delivers (the name first; at least one argument). */
export function commandFromArgs(all: readonly Buffer[]): RespCommand {
  return { name: commandName(all[0]!), args: all.slice(1) };
}

/** The command name, ASCII-lowercased. */
function commandName(raw: Buffer): string {
  const length = raw.length;
  const slot = length === 0 ? 0 : (length * 31 + raw[0]!) & (SLOTS - 1);
  const known = slotBytes[slot];
  if (known !== undefined && known.length === length) {
    let i = 0;
    while (i < length && known[i] === raw[i]) i++;
    if (i === length) return slotNames[slot]!;
  }
  const text = raw.toString('latin1');
  // Only ASCII letters are folded, as C strcasecmp does; toLowerCase() alone would fold latin1 too.
  const name = UPPER.test(text) ? text.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : text;
  if (length <= MAX_CACHED_LENGTH) {
    // A copy: the name must not keep the client's read buffer alive.
    slotBytes[slot] = Buffer.from(raw);
    slotNames[slot] = name;
  }
  return name;
}
