import type { RespPairs, RespValue } from './types.js';

export type AggregateKind = 'array' | 'set' | 'push' | 'map' | 'attribute';

/** An aggregate the decoder is inside of (client mode). */
export interface Frame {
  kind: AggregateKind;
  /** Elements so far; maps and attributes keep keys and values flat until complete. */
  items: RespValue[];
  /** Elements still expected, or -1 for a streamed aggregate that ends with '.'. */
  remaining: number;
  attributes: RespPairs | undefined;
}

/** Flat key, value, key, value … as pairs. */
export function toPairs(items: RespValue[]): RespPairs {
  const pairs: RespPairs = [];
  for (let i = 0; i + 1 < items.length; i += 2) pairs.push([items[i]!, items[i + 1]!]);
  return pairs;
}

/** A complete array, set, push or map frame as its value, with the attributes that preceded it. */
export function frameValue(frame: Frame): RespValue {
  const items = frame.items;
  let value: RespValue;
  switch (frame.kind) {
    case 'array':
      value = { type: 'array', value: items };
      break;
    case 'set':
      value = { type: 'set', value: items };
      break;
    case 'push':
      value = { type: 'push', value: items };
      break;
    default:
      value = { type: 'map', value: toPairs(items) };
  }
  if (frame.attributes !== undefined) value.attributes = frame.attributes;
  return value;
}
