import type { IncomingHttpHeaders } from 'node:http';
import { isExtensionName } from '@pullplane/extension-config';
import { isDnsLabel } from '@pullplane/names';
import { checkRequestPath } from '@pullplane/proto';
import { agentFromClusterServer } from '@pullplane/registration';
import type { ExtensionProxyFailure } from './errors.js';

export const CLUSTER_NAME_HEADER = 'argocd-target-cluster-name';
export const CLUSTER_URL_HEADER = 'argocd-target-cluster-url';

export interface ExtensionTarget {
  agent: string;
  extension: string;
  /** Path and query relative to the extension's base, as the agent must see them. */
  path: string;
}

/** An accepted extension request: where it goes, and who asked. */
export interface ExtensionRequest extends ExtensionTarget {
  /** The Argo CD server's identity. */
  caller: string;
  via: 'mtls' | 'token' | 'mesh';
  /** The bearer token's `jti` (via token): its revocation ends what it opened. */
  jti?: string;
}

type Result =
  | { ok: true; target: ExtensionTarget }
  /** `extension` once the path named one, for metrics. */
  | { ok: false; failure: ExtensionProxyFailure; extension?: string };

/** The one value of a header Argo CD sends once; a repeated one is refused, never guessed at. */
function single(headers: IncomingHttpHeaders, name: string): string | undefined | Error {
  const v = headers[name];
  if (Array.isArray(v)) return new Error(`${name} sent more than once`);
  return v;
}

/**
 * Reads what Argo CD sends: `/<extension>/<path>` (its `/extensions/<name>` prefix already
 * removed; our Service URL in `extension.config` ends with `/<name>`), and the Application's
 * destination as `Argocd-Target-Cluster-Name` (the agent's name) and/or
 * `Argocd-Target-Cluster-URL` (the `server` cluster registration wrote for the agent). When
 * both come, they must name the same agent.
 */
export function resolveExtensionTarget(
  rawUrl: string,
  headers: IncomingHttpHeaders,
  clusterUrlBases: readonly string[],
): Result {
  const problem = checkRequestPath(rawUrl);
  if (problem) return { ok: false, failure: { name: 'BAD_PATH', detail: problem } };
  const q = rawUrl.indexOf('?');
  const pathOnly = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const m = /^\/([^/]+)(\/.*)?$/.exec(pathOnly);
  if (!m || !isExtensionName(m[1])) return { ok: false, failure: { name: 'BAD_EXTENSION' } };
  const extension = m[1]!;
  const path = (m[2] ?? '/') + (q < 0 ? '' : rawUrl.slice(q));

  const name = single(headers, CLUSTER_NAME_HEADER);
  const url = single(headers, CLUSTER_URL_HEADER);
  if (name instanceof Error)
    return { ok: false, extension, failure: { name: 'BAD_HEADER', detail: name.message } };
  if (url instanceof Error)
    return { ok: false, extension, failure: { name: 'BAD_HEADER', detail: url.message } };
  let byName: string | undefined;
  let byUrl: string | undefined;
  if (name !== undefined && name !== '') {
    if (!isDnsLabel(name))
      return {
        ok: false,
        extension,
        failure: { name: 'BAD_TARGET', detail: `"${name.slice(0, 64)}" is not an agent name` },
      };
    byName = name;
  }
  if (url !== undefined && url !== '') {
    byUrl = agentFromClusterServer(url, clusterUrlBases);
    if (!byUrl)
      return {
        ok: false,
        extension,
        failure: {
          name: 'BAD_TARGET',
          detail: `${url.slice(0, 200)} is not a cluster URL registered for an agent (expected <resource proxy URL>/clusters/<agent>)`,
        },
      };
  }
  if (byName && byUrl && byName !== byUrl)
    return { ok: false, extension, failure: { name: 'TARGET_MISMATCH', detail: `${byName} ≠ ${byUrl}` } };
  const agent = byName ?? byUrl;
  if (!agent) return { ok: false, extension, failure: { name: 'NO_TARGET' } };
  return { ok: true, target: { agent, extension, path } };
}
