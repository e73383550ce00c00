import type { IncomingMessage } from 'node:http';
import {
  type CredentialKindPolicy,
  extractBearerToken,
  extractHeaderIdentity,
  type HeaderAuthMethod,
  TokenError,
  type TokenVerifier,
} from '@pullplane/auth';
import { connectionPeers } from '@pullplane/http-front';
import { isDnsLabel } from '@pullplane/names';
import { checkRequestPath } from '@pullplane/proto';
import type { ProxyFailure } from './errors.js';

export interface CallerAuthOptions {
  /** Verifies caller tokens (audience `resource-proxy`); give it a deny list for revocation. */
  tokens?: TokenVerifier;
  /** Mesh mode: the caller's identity header, and who may use the proxy that way. */
  meshIdentity?: { method: HeaderAuthMethod; allowed: readonly string[] };
  /** Revoked agents are unreachable whatever the caller's credentials. */
  isRevoked?: (agent: string) => boolean;
}

/** Only caller certificates reach a cluster: never an agent's or a proxy's, never an unmarked one. */
const CALLER_CERTIFICATES: CredentialKindPolicy = {
  expect: 'caller',
  unmarkedHint: 'issue caller certificates with `pullplane kubeconfig --client-ca-cert … --client-ca-key …`',
};

export interface ResolvedTarget {
  caller: string;
  via: 'mtls' | 'token' | 'mesh';
  /** The caller token's `jti` (via token): its revocation ends what it opened. */
  jti?: string;
  agent: string;
  /** Path and query as the agent's API server must see them. */
  path: string;
}

const PREFIX = /^\/(?:k8s\/)?clusters\/([^/]*)(\/.*)?$/;
/** argocd-agent's cluster Secrets address an agent as `server: https://<proxy>?agentName=<agent>`. */
const AGENT_NAME_PARAM = 'agentName';

/**
 * Works out who is asking and for which agent, never routing to an agent the caller is not
 * bound to: a caller certificate binds to the agent named by its CN; a token to the agents
 * it lists; a mesh identity on the allow-list to any agent named in the path. A revoked
 * agent is refused to everyone. The agent is named by `/clusters/<agent>/…`, or by
 * argocd-agent's `?agentName=<agent>` (removed before the request goes on); both must agree.
 */
export async function resolveTarget(
  req: IncomingMessage,
  opts: CallerAuthOptions,
): Promise<{ ok: true; target: ResolvedTarget } | { ok: false; failure: ProxyFailure }> {
  const raw = req.url ?? '/';
  // The path rule both ends apply (see @pullplane/proto).
  const problem = checkRequestPath(raw);
  if (problem) return { ok: false, failure: { name: 'BAD_PATH', detail: problem } };

  let agentFromPath: string | undefined;
  let path = raw;
  const pathOnly = raw.split('?')[0]!;
  const m = PREFIX.exec(pathOnly);
  if (m) {
    agentFromPath = m[1]!;
    if (!isDnsLabel(agentFromPath)) {
      return {
        ok: false,
        failure: { name: 'BAD_PATH', detail: `"${agentFromPath.slice(0, 64)}" is not an agent name` },
      };
    }
    path = (m[2] ?? '/') + raw.slice(pathOnly.length);
  }
  const query = agentNameQuery(path);
  if (!query.ok) return { ok: false, failure: { name: 'BAD_PATH', detail: query.detail } };
  if (query.agent !== undefined) {
    if (agentFromPath !== undefined && agentFromPath !== query.agent) {
      return {
        ok: false,
        failure: {
          name: 'BAD_PATH',
          detail: `the path names agent ${agentFromPath} but ?${AGENT_NAME_PARAM}= names ${query.agent}`,
        },
      };
    }
    agentFromPath = query.agent;
    path = query.path;
  }

  const caller = await identifyCaller(req, opts);
  if (!caller.ok) return caller;
  const { identity, via, agents, jti } = caller;
  const agent = agentFromPath ?? (agents !== '*' && agents.length === 1 ? agents[0] : undefined);
  if (!agent) {
    return {
      ok: false,
      failure: {
        name: 'BAD_PATH',
        detail: `name the agent with /clusters/<agent>/… or ?${AGENT_NAME_PARAM}=<agent> for credentials that cover several agents`,
      },
    };
  }
  if (agents !== '*' && !agents.includes(agent)) {
    return { ok: false, failure: { name: 'NOT_BOUND', detail: `${identity} may not reach agent ${agent}` } };
  }
  if (opts.isRevoked?.(agent)) {
    return { ok: false, failure: { name: 'REVOKED', detail: `agent ${agent} has been revoked` } };
  }
  return { ok: true, target: { caller: identity, via, agent, path, ...(jti ? { jti } : {}) } };
}

type Caller =
  | { ok: true; identity: string; via: ResolvedTarget['via']; agents: string[] | '*'; jti?: string }
  | { ok: false; failure: ProxyFailure };

const connectionPeer = connectionPeers(CALLER_CERTIFICATES);

async function identifyCaller(req: IncomingMessage, opts: CallerAuthOptions): Promise<Caller> {
  const peer = connectionPeer(req.socket);
  // A certificate the TLS layer could not verify is refused whatever else comes with it.
  if (peer.kind === 'unverified')
    return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: peer.detail } };
  // The token first, as argocd-agent checks it: its cluster Secrets carry a token and a
  // shared client certificate, and the token is what names the agent.
  if (req.headers.authorization !== undefined) {
    if (!opts.tokens)
      return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: 'bearer tokens are not enabled' } };
    const bearer = extractBearerToken(req.headers);
    if (!bearer.ok) return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: bearer.reason } };
    try {
      const t = await opts.tokens.verify(bearer.token);
      return { ok: true, identity: t.agent, via: 'token', agents: t.agents ?? [t.agent], jti: t.jti };
    } catch (err) {
      const detail = err instanceof TokenError ? err.message : 'token rejected';
      return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail } };
    }
  }
  if (peer.kind === 'caller')
    return { ok: true, identity: peer.identity, via: 'mtls', agents: [peer.identity] };
  if (peer.kind === 'not-caller')
    return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: peer.detail } };
  if (opts.meshIdentity && req.headers[opts.meshIdentity.method.header] !== undefined) {
    const id = extractHeaderIdentity(opts.meshIdentity.method, req.headers);
    if (!id.ok) return { ok: false, failure: { name: 'BAD_CREDENTIALS', detail: id.reason } };
    if (!opts.meshIdentity.allowed.includes(id.identity.agent)) {
      return {
        ok: false,
        failure: { name: 'NOT_BOUND', detail: `${id.identity.agent} is not an allowed caller` },
      };
    }
    return { ok: true, identity: id.identity.agent, via: 'mesh', agents: '*' };
  }
  return { ok: false, failure: { name: 'NO_CREDENTIALS' } };
}

/** `?agentName=<agent>`: the agent, and the path with the parameter removed. */
function agentNameQuery(
  path: string,
): { ok: true; agent?: string; path: string } | { ok: false; detail: string } {
  const q = path.indexOf('?');
  if (q < 0) return { ok: true, path };
  const params = new URLSearchParams(path.slice(q + 1));
  const values = params.getAll(AGENT_NAME_PARAM);
  if (values.length === 0) return { ok: true, path };
  const agent = values[0]!;
  if (values.length > 1 || !isDnsLabel(agent)) {
    return { ok: false, detail: `?${AGENT_NAME_PARAM}= must name one agent (a DNS label)` };
  }
  // Remove just that parameter, leaving the others exactly as sent.
  const kept = path
    .slice(q + 1)
    .split('&')
    .filter((p) => p !== '' && paramName(p) !== AGENT_NAME_PARAM);
  return {
    ok: true,
    agent,
    path: kept.length > 0 ? `${path.slice(0, q)}?${kept.join('&')}` : path.slice(0, q),
  };
}

function paramName(pair: string): string {
  const raw = pair.split('=')[0]!.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
