/**
 * Whether a request path (`HttpRequestHead.path`, with its query) is safe to append to a
 * base path: rejects anything that could walk out of it once decoded — dot segments, encoded
 * separators or dots, backslashes, control characters, empty segments, broken
 * percent-encoding. Both ends check: the proxy that builds the path and the agent that
 * resolves it against a base it alone knows.
 * @returns a reason when the path is refused, undefined when it is safe
 */
export function checkRequestPath(rawPath: string): string | undefined {
  return plainRequestPath(rawPath) ? undefined : requestPathRefusal(rawPath);
}

const SLASH = 0x2f;
const DOT = 0x2e;
const PERCENT = 0x25;
const QUESTION = 0x3f;
const BACKSLASH = 0x5c;
const DEL = 0x7f;

/**
 * One pass over the path (every request's, on both ends) for what nearly all are: starts with
 * `/`, no `%`, no `//`, no segment starting with a dot, and no control character or backslash
 * anywhere. Those pass every rule of `requestPathRefusal` by construction; anything else, safe or not, is
 * judged by it. A prefilter, so it may only ever say less than the full check, never more.
 */
function plainRequestPath(rawPath: string): boolean {
  if (rawPath.charCodeAt(0) !== SLASH) return false;
  let inPath = true;
  let prev = SLASH;
  for (let i = 1; i < rawPath.length; i++) {
    const c = rawPath.charCodeAt(i);
    if (c < 0x20 || c === DEL || c === BACKSLASH) return false;
    if (inPath) {
      if (c === QUESTION) inPath = false;
      else if (c === PERCENT || (prev === SLASH && (c === SLASH || c === DOT))) return false;
    }
    prev = c;
  }
  return true;
}

/** The full check, rule by rule (exported for the tests that hold the prefilter to it). */
export function requestPathRefusal(rawPath: string): string | undefined {
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
