import { encodeCommand, type RespValue, resp } from '@pullplane/resp';
import type { CommandRoute } from './command-routing.js';

export type SplitRoute = Extract<CommandRoute, { kind: 'split' }>;

export interface SplitTargets {
  agent(agent: string, args: Buffer[]): Promise<RespValue>;
  principal(command: Buffer): Promise<RespValue>;
}

/**
 * MGET, DEL, UNLINK or EXISTS whose keys live in several places: each destination answers its
 * share, and the shares are merged in key order (MGET) or summed (the others).
 */
export async function runSplit(
  route: SplitRoute,
  name: Buffer,
  keys: readonly Buffer[],
  targets: SplitTargets,
): Promise<RespValue> {
  const values = await Promise.all(
    route.parts.map((part) => {
      const args = [name, ...part.indexes.map((i) => keys[i]!)];
      return part.agent !== undefined
        ? targets.agent(part.agent, args)
        : targets.principal(encodeCommand(args));
    }),
  );
  return merge(route, values, keys.length);
}

function merge(route: SplitRoute, values: RespValue[], keyCount: number): RespValue {
  const failed = values.find((v) => v.type === 'error');
  if (failed) return failed;
  if (route.merge === 'sum') {
    let total = 0n;
    for (const v of values) {
      if (v.type !== 'integer') return resp.error('ERR unexpected reply while merging');
      total += BigInt(v.value);
    }
    const safe = total >= BigInt(Number.MIN_SAFE_INTEGER) && total <= BigInt(Number.MAX_SAFE_INTEGER);
    return resp.integer(safe ? Number(total) : total);
  }
  const out: RespValue[] = new Array(keyCount);
  for (const [i, part] of route.parts.entries()) {
    const v = values[i]!;
    if (v.type !== 'array' || v.value === null || v.value.length !== part.indexes.length)
      return resp.error('ERR unexpected reply while merging');
    for (const [j, index] of part.indexes.entries()) out[index] = v.value[j]!;
  }
  return resp.array(out);
}
