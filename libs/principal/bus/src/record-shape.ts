/**
 * The shapes of what other replicas write to the bus, checked field by field. Each record is a
 * handful of strings and numbers, so a few checks cover it; a schema library would cost the
 * gateway megabytes of resident memory for three small shapes.
 */

/** A field's check: undefined when the value fits, else what is wrong with it. */
export type FieldCheck = (value: unknown) => string | undefined;

export type Shape = Readonly<Record<string, FieldCheck>>;

export const text =
  (o: { min?: number; max?: number } = {}): FieldCheck =>
  (v) => {
    if (typeof v !== 'string') return 'must be a string';
    if (o.min !== undefined && v.length < o.min) return `must be at least ${o.min} characters`;
    if (o.max !== undefined && v.length > o.max) return `must be at most ${o.max} characters`;
    return undefined;
  };

export const integer: FieldCheck = (v) =>
  typeof v === 'number' && Number.isSafeInteger(v) ? undefined : 'must be a whole number';

export const oneOf =
  (...values: readonly string[]): FieldCheck =>
  (v) =>
    typeof v === 'string' && values.includes(v) ? undefined : `must be one of ${values.join(', ')}`;

/** Absent, or else `check` (null is not absent: our writers leave a field out). */
export const optional =
  (check: FieldCheck): FieldCheck =>
  (v) =>
    v === undefined ? undefined : check(v);

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `value` as the shape says, with only the shape's fields (others are dropped, not carried
 * on), or every problem found.
 */
export function readShape(
  value: unknown,
  shape: Shape,
): { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] } {
  if (!isRecord(value)) return { ok: false, problems: ['not a JSON object'] };
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [field, check] of Object.entries(shape)) {
    const v = value[field];
    const problem = check(v);
    if (problem) problems.push(`${field} ${problem}`);
    else if (v !== undefined) out[field] = v;
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: out };
}

/**
 * One of several shapes, chosen by the string in `tag` (`type`, `kind`): an unknown tag is a
 * problem of its own.
 */
export function readTagged(
  value: unknown,
  tag: string,
  shapes: Readonly<Record<string, Shape>>,
): { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] } {
  if (!isRecord(value)) return { ok: false, problems: ['not a JSON object'] };
  const t = value[tag];
  const shape = typeof t === 'string' && Object.hasOwn(shapes, t) ? shapes[t] : undefined;
  if (!shape) return { ok: false, problems: [`${tag} must be one of ${Object.keys(shapes).join(', ')}`] };
  const read = readShape(value, shape);
  if (read.ok) read.value[tag] = t;
  return read;
}
