import { isStrippedBackendResponseHeader } from '@pullplane/names';

/**
 * A backend's answer headers as they go back through the tunnel: hop-by-hop ones and
 * `set-cookie` stay behind, except that a 101 keeps `Upgrade` (the protocol switched to; the
 * proxy re-adds `Connection`); `Content-Length` too when the body sent on is not the backend's
 * (filtered).
 */
export function backendResponseHeaders(
  res: { readonly rawHeaders: readonly string[] },
  o: { upgraded?: boolean; bodyRewritten?: boolean } = {},
): Array<{ name: string; value: string }> {
  const out: Array<{ name: string; value: string }> = [];
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (isStrippedBackendResponseHeader(lower) && !(o.upgraded && lower === 'upgrade')) continue;
    if (o.bodyRewritten && lower === 'content-length') continue;
    out.push({ name, value: res.rawHeaders[i + 1]! });
  }
  return out;
}
