import { isDnsLabelBytes } from '@pullplane/names';

/**
 * How an agent's keys and channels are named in the control plane's Redis: a `|`-separated
 * prefix, then `<agent>_`, then the name the agent's own Redis knows. The proxy routes on it
 * (with its prefix list), the agent cuts and restores it (without one).
 */
export const PIPE = 0x7c;
export const UNDERSCORE = 0x5f;

export interface LocalName {
  agent: string;
  /** The name with `<agent>_` cut out: what the agent's own Redis knows. */
  local: Buffer;
  prefixLength: number;
}

/**
 * The agent's side of the rule, which needs no prefix list: the first `_` ends the agent name,
 * which starts after the last `|` before it. Returns a reason string when the name has no
 * agent part, or names an agent other than `self` (when the agent knows its name).
 */
export function toLocalName(name: Buffer, self: string | undefined): LocalName | string {
  const us = name.indexOf(UNDERSCORE);
  if (us === -1) return 'no <agent>_ part';
  const pipe = name.lastIndexOf(PIPE, us);
  if (pipe === -1) return 'no <agent>_ part after a |-separated prefix';
  if (!isDnsLabelBytes(name, pipe + 1, us)) return 'the agent part is not a DNS label';
  const agent = name.toString('latin1', pipe + 1, us);
  if (self !== undefined && agent !== self) return `it belongs to agent ${agent}`;
  const local = Buffer.concat([name.subarray(0, pipe + 1), name.subarray(us + 1)]);
  return { agent, local, prefixLength: pipe + 1 };
}

/** The inverse of the cut: a local channel name as the client knows it. */
export function toClientName(local: Buffer, prefixLength: number, agent: string): Buffer {
  return Buffer.concat([
    local.subarray(0, prefixLength),
    Buffer.from(`${agent}_`, 'latin1'),
    local.subarray(prefixLength),
  ]);
}
