import { describe, expect, it } from 'vitest';
import { filterList, ManagedResolver } from '../src/index.js';
import { mulberry32, runAllChunkings } from './support/chunking.js';

const ALPHABET = [
  'a',
  'Z',
  '0',
  ' ',
  '"',
  '\\',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '\n',
  '\t',
  'é',
  '日',
  '🚀',
  '\u2028',
  '\u0000',
  '/',
];
const KEYS = ['items', 'rows', 'metadata', 'name', 'x', 'it\u0065ms', 'a"b', ''];

/** Random JSON with every character that could confuse a hand-written scanner. */
function randomValue(rnd: () => number, depth: number): unknown {
  const pick = Math.floor(rnd() * (depth > 3 ? 4 : 7));
  switch (pick) {
    case 0:
      return Array.from(
        { length: Math.floor(rnd() * 12) },
        () => ALPHABET[Math.floor(rnd() * ALPHABET.length)],
      ).join('');
    case 1:
      return Math.floor(rnd() * 1e6) / (rnd() < 0.5 ? 1 : 7);
    case 2:
      return rnd() < 0.5 ? null : rnd() < 0.5;
    case 3:
      return -Math.floor(rnd() * 1e3);
    case 4:
      return Array.from({ length: Math.floor(rnd() * 4) }, () => randomValue(rnd, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(rnd() * 4); i > 0; i--)
        o[KEYS[Math.floor(rnd() * KEYS.length)]!] = randomValue(rnd, depth + 1);
      return o;
    }
  }
}

function randomList(seed: number) {
  const rnd = mulberry32(seed);
  const items = Array.from({ length: Math.floor(rnd() * 25) }, (_, i) => {
    const annotations: Record<string, unknown> = { noise: randomValue(rnd, 2) };
    if (rnd() < 0.5) annotations['argocd.argoproj.io/tracking-id'] = `app:/ConfigMap:ns/cm-${i}`;
    return {
      metadata: { name: `cm-${i}`, annotations },
      data: randomValue(rnd, 1),
      items: randomValue(rnd, 2),
    };
  });
  const doc: Record<string, unknown> = { kind: 'ConfigMapList', apiVersion: 'v1' };
  const meta = { resourceVersion: String(seed), remainingItemCount: 3, extra: randomValue(rnd, 2) };
  if (rnd() < 0.5) {
    doc.metadata = meta;
    doc.items = items;
  } else {
    doc.items = items;
    doc.metadata = meta;
  }
  doc.trailer = randomValue(rnd, 1);
  const indent = [undefined, 1, 2, '\t'][Math.floor(rnd() * 4)];
  return { doc, text: JSON.stringify(doc, null, indent) };
}

describe('filterList against a reference implementation', () => {
  it.each(Array.from({ length: 25 }, (_, i) => i + 1))('random document %i', async (seed) => {
    const { doc, text } = randomList(seed);
    const resolver = () => new ManagedResolver({ getObject: async () => undefined });
    const out = await runAllChunkings(text, (src) => filterList(src, resolver()));
    const expected = structuredClone(doc) as {
      items: Array<{ metadata: { annotations: Record<string, unknown> } }>;
      metadata: { remainingItemCount?: number };
    };
    expected.items = expected.items.filter((i) => 'argocd.argoproj.io/tracking-id' in i.metadata.annotations);
    delete expected.metadata.remainingItemCount;
    expect(JSON.parse(out)).toEqual(expected);
  });
});
