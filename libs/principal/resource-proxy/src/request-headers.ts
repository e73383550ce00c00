import { IMPERSONATION_HEADER_PREFIX, isStrippedRequestHeader } from '@pullplane/names';

/**
 * Which request headers stay behind: hop-by-hop, credentials and identities of the hops in
 * between (the shared list), the configured mesh identity header whatever it is called, and
 * Impersonate-* unless the caller may impersonate.
 */
export function requestHeaderRule(
  meshHeader: string | undefined,
  mayImpersonate: boolean,
): (lower: string) => boolean {
  return (lower) =>
    isStrippedRequestHeader(lower) ||
    lower === meshHeader ||
    (!mayImpersonate && lower.startsWith(IMPERSONATION_HEADER_PREFIX));
}

/** A watch, or a followed log: it may stay quiet for long, and each event must go out as it comes. */
export function isStreaming(path: string): boolean {
  const at = path.indexOf('?');
  // Without a query neither `watch` nor `follow` is set (asked twice a request: keep it cheap).
  if (at < 0) return path.includes('/watch/');
  const q = new URLSearchParams(path.slice(at + 1));
  const watch = q.get('watch');
  if (watch === 'true' || watch === '1' || path.includes('/watch/')) return true;
  return /\/log(\?|$)/.test(path) && q.get('follow') === 'true';
}
