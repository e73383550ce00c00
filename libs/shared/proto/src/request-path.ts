/**
 * Whether a request path (`HttpRequestHead.path`, with its query) is safe to append to a
 * base path: rejects anything that could walk out of it once decoded — dot segments, encoded
 * separators or dots, backslashes, control characters, empty segments, broken
 * percent-encoding. Both ends check: the proxy that builds the path and the agent that
 * resolves it against a base it alone knows.
 * @returns a reason when the path is refused, undefined when it is safe
 */
export function checkRequestPath(rawPath: string): string | undefined {
  const q = rawPath.indexOf('?');
  const path = q < 0 ? rawPath : rawPath.slice(0, q);
  if (!path.startsWith('/')) return 'path must start with /';
  if (/%(2e|2f|5c|00)/i.test(path)) return 'encoded dots, slashes or NUL are not allowed in the path';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  if (/[\\\x00-\x1f\x7f]/.test(rawPath)) return 'control characters or backslashes are not allowed';
  if (path.length > 1 && path.includes('//')) return 'empty path segments are not allowed';
  for (const seg of path.split('/')) if (seg === '.' || seg === '..') return 'dot segments are not allowed';
  try {
    decodeURIComponent(path);
  } catch {
    return 'malformed percent-encoding';
  }
  return undefined;
}
