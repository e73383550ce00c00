/** argocd-agent's cluster Secrets address an agent as `https://<proxy>?agentName=<agent>`. */
const AGENT_NAME_PARAM = 'agentName';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The `server` registration writes for an agent: `<resource proxy URL>/clusters/<agent>`. */
export function clusterServerUrl(base: string, agent: string): string {
  return `${base.replace(/\/+$/, '')}/clusters/${agent}`;
}

/**
 * The agent a cluster `server` URL addresses, if it is one registration (ours, or
 * argocd-agent's `?agentName=` form) would have written for one of `bases` (resource proxy
 * URLs); undefined for anything else. Scheme, host and port must match a base exactly.
 */
export function agentFromClusterServer(server: string, bases: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return undefined;
  }
  for (const b of bases) {
    let base: URL;
    try {
      base = new URL(b);
    } catch {
      continue;
    }
    if (url.origin !== base.origin || url.username || url.password || url.hash) continue;
    const prefix = base.pathname.replace(/\/+$/, '');
    const rest = url.pathname.replace(/\/+$/, '');
    if (url.search === '') {
      const m = /^\/clusters\/([^/]+)$/.exec(rest.startsWith(prefix) ? rest.slice(prefix.length) : '');
      if (m && DNS_LABEL.test(m[1]!)) return m[1];
      continue;
    }
    const params = new URLSearchParams(url.search);
    const values = params.getAll(AGENT_NAME_PARAM);
    if ([...params.keys()].length !== 1 || values.length !== 1 || rest !== prefix) continue;
    if (DNS_LABEL.test(values[0]!)) return values[0];
  }
  return undefined;
}
