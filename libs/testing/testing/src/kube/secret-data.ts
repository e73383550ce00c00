import { errors } from './status.js';
import { isPlainObject, type KubeObject } from './types.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function isNewline(c: string | undefined): boolean {
  return c === '\n' || c === '\r';
}

/**
 * Where Go's base64.StdEncoding.DecodeString fails on `s` (the byte offset its CorruptInputError
 * reports), or undefined when `s` decodes. Go is stricter than Buffer.from(s, 'base64'): padding is
 * required, nothing may follow it, and only CR/LF are skipped.
 */
export function goBase64ErrorOffset(s: string): number | undefined {
  let si = 0;
  while (si < s.length) {
    for (let j = 0; j < 4; j++) {
      if (si === s.length) {
        if (j === 0) return undefined;
        return si - j;
      }
      const c = s[si]!;
      si++;
      if (ALPHABET.includes(c)) continue;
      if (isNewline(c)) {
        j--;
        continue;
      }
      if (c !== '=') return si - 1;
      // Padding: only in the third or fourth place of a quantum, then the end of the input.
      if (j === 0 || j === 1) return si - 1;
      if (j === 2) {
        while (si < s.length && isNewline(s[si])) si++;
        if (si === s.length) return s.length;
        if (s[si] !== '=') return si - 1;
        si++;
      }
      while (si < s.length && isNewline(s[si])) si++;
      return si < s.length ? si : undefined;
    }
    while (si < s.length && isNewline(s[si])) si++;
  }
  return undefined;
}

/** encoding/json's name for a JSON value's type in its unmarshal errors. */
function goJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}

function cannotHandle(detail: string) {
  return errors.badRequest(`Secret in version "v1" cannot be handled as a Secret: ${detail}`);
}

/**
 * What decoding a v1 Secret does on a real server: every `data` value must be a base64 string
 * (`[]byte` in Go), and `stringData` is write-only, merged over `data` and never stored.
 */
export function admitSecret(obj: KubeObject): void {
  const data = obj.data;
  if (data !== undefined && data !== null && !isPlainObject(data)) {
    throw cannotHandle('json: cannot unmarshal into Go struct field Secret.data of type map[string][]uint8');
  }
  const merged: Record<string, unknown> = { ...(data ?? {}) };
  for (const [key, value] of Object.entries(merged)) {
    if (value === null) continue;
    if (typeof value !== 'string') {
      throw cannotHandle(
        `json: cannot unmarshal ${goJsonType(value)} into Go struct field Secret.data of type []uint8`,
      );
    }
    const offset = goBase64ErrorOffset(value);
    if (offset !== undefined) throw cannotHandle(`illegal base64 data at input byte ${offset}`);
    merged[key] = value.replace(/[\r\n]/g, '');
  }
  const stringData = obj.stringData;
  if (stringData !== undefined && stringData !== null) {
    if (!isPlainObject(stringData)) {
      throw cannotHandle(
        'json: cannot unmarshal into Go struct field Secret.stringData of type map[string]string',
      );
    }
    for (const [key, value] of Object.entries(stringData)) {
      if (typeof value !== 'string') {
        throw cannotHandle(
          `json: cannot unmarshal ${goJsonType(value)} into Go struct field Secret.stringData of type string`,
        );
      }
      merged[key] = Buffer.from(value, 'utf8').toString('base64');
    }
  }
  delete obj.stringData;
  if (Object.keys(merged).length > 0) obj.data = merged;
  else if (data !== undefined) obj.data = merged;
}
