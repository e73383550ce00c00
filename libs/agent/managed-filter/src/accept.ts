/** Splits on `sep` outside double-quoted parameter values. */
function splitOutside(value: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quoted && c === '\\' && i + 1 < value.length) {
      cur += c + value[i + 1]!;
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === sep && !quoted) {
      out.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  out.push(cur);
  return out;
}

/**
 * Rewrites an Accept header so the API server answers in JSON, the only encoding the filters
 * can read. Every media range keeps its position and its parameters (as=Table;v=v1;g=meta.k8s.io,
 * stream=watch) but becomes application/json; q-values are dropped since all ranges are now
 * the same type. Apply it only to requests whose response will be filtered: other endpoints
 * (pod logs) have their own content types.
 */
export function negotiateAccept(accept: string | undefined): string {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const range of splitOutside(accept ?? '', ',')) {
    const [type, ...rawParams] = splitOutside(range, ';').map((s) => s.trim());
    if (!type) continue;
    const params = rawParams.filter((p) => p !== '' && !/^q\s*=/i.test(p));
    const value = ['application/json', ...params].join(';');
    if (seen.has(value)) continue;
    seen.add(value);
    out.push(value);
  }
  return out.length > 0 ? out.join(',') : 'application/json';
}

/** True when a response Content-Type is JSON (plain or stream=watch); anything else must not be forwarded filtered. */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^\s*application\/json\s*(;|$)/i.test(contentType);
}
