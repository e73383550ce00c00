import type { Metadata } from '@grpc/grpc-js';

/**
 * Request headers as Node and most frameworks expose them: any key case, a value or a
 * list of values. Lists matter: a header sent twice must stay visible as two values.
 */
export type HeaderBag = Readonly<Record<string, string | readonly string[] | undefined>>;

/** All values of `name` (case-insensitive), in order, across differently-cased keys. */
export function headerValues(headers: HeaderBag, name: string): string[] {
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    if (typeof value === 'string') values.push(value);
    else values.push(...value);
  }
  return values;
}

/**
 * Adapts grpc-js Metadata, keeping every value of a repeated key (`getMap()` keeps only
 * the first, which would hide a second, injected identity header). Binary (`-bin`)
 * entries are skipped: no identity source uses them.
 */
export function headersFromGrpcMetadata(metadata: Metadata): Record<string, string[]> {
  // Null prototype: metadata keys are attacker-chosen and "__proto__" is a legal one.
  const out: Record<string, string[]> = Object.create(null);
  for (const [key, values] of Object.entries(metadata.toJSON())) {
    const strings = values.filter((v): v is string => typeof v === 'string');
    if (strings.length > 0) out[key] = strings;
  }
  return out;
}
