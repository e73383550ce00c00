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
 * Names as sent, folded: a client sends the same few names over and over, and folding one
 * (a regular expression and a replacement string) cost more than the rest of reading it. Only
 * short names are kept, and only so many, so made-up names cannot grow the table.
 */
const FOLDED = new Map<string, string>();
const MAX_FOLDED = 512;
const MAX_FOLDED_LENGTH = 32;

/** A command from what a server-mode decoder's onCommand delivers (the name first; at least one argument). */
export function commandFromArgs(all: readonly Buffer[]): RespCommand {
  const raw = all[0]!.toString('latin1');
  let name = FOLDED.get(raw);
  if (name === undefined) {
    // Only ASCII letters are folded, as C strcasecmp does; toLowerCase() alone would fold latin1 too.
    name = UPPER.test(raw) ? raw.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : raw;
    if (raw.length <= MAX_FOLDED_LENGTH && FOLDED.size < MAX_FOLDED) FOLDED.set(raw, name);
  }
  return { name, args: all.slice(1) };
}
