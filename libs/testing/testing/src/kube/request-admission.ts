import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { firstValues } from './http-io.js';
import { hasImpersonation, impersonate } from './impersonation.js';
import type { RbacRules } from './rbac.js';
import { errors } from './status.js';

export interface RequestLog {
  method: string;
  path: string;
  /** First value of each query parameter. */
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  time: number;
  /** Client certificate CN, or `tokenUser` for bearer-token requests; undefined when anonymous. */
  user?: string | undefined;
  /** Response status (101 for an upgrade), filled in once the response has been sent. */
  status?: number | undefined;
}

export interface FaultRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
}

/** What a fault hook can make a request do (return undefined to serve normally). */
export type FaultAction =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { hang: true }
  /** 200 with the start of a JSON body, then nothing more: a response stalled mid-body. */
  | { stallBody: string }
  | { destroy: true }
  | { delayMs: number };

export type FaultHook = (req: FaultRequest) => FaultAction | undefined;

/** A fault that replaces the answer (a delay only postpones it). */
export type ReplacingFault = Exclude<FaultAction, { delayMs: number }>;

export interface AdmissionOptions {
  token: string | undefined;
  tokenUser: string;
  /** Requests need credentials (a token or a client CA is configured). */
  authRequired: boolean;
  strict: boolean;
  rbac: RbacRules;
  maxRequestLog: number;
  latencyMs: number;
  fault: FaultHook | undefined;
}

function peerName(req: IncomingMessage): string | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  if (!socket.authorized || typeof socket.getPeerCertificate !== 'function') return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn;
}

/** Health endpoints stay reachable without credentials, as on a real cluster. */
function isPublicPath(path: string): boolean {
  return path === '/healthz' || path === '/livez' || path === '/readyz' || path === '/version';
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * What every request goes through before routing, plain or upgrade: the request log,
 * authentication, injected faults and latency, then impersonation (decided before authorization,
 * as in the API server's filter chain).
 */
export class RequestAdmission {
  readonly requests: RequestLog[] = [];
  latencyMs: number;
  fault: FaultHook | undefined;

  constructor(private readonly opts: AdmissionOptions) {
    this.latencyMs = opts.latencyMs;
    this.fault = opts.fault;
  }

  /** Logs the request and names its authenticated user (undefined when anonymous). */
  begin(req: IncomingMessage): { url: URL; entry: RequestLog; user: string | undefined } {
    const url = new URL(req.url ?? '/', 'http://fake');
    const { token, tokenUser } = this.opts;
    const user =
      peerName(req) ?? (token && req.headers.authorization === `Bearer ${token}` ? tokenUser : undefined);
    const entry: RequestLog = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: firstValues(url.searchParams),
      headers: { ...req.headers },
      time: Date.now(),
      user,
    };
    this.requests.push(entry);
    if (this.requests.length > this.opts.maxRequestLog) {
      this.requests.splice(0, this.requests.length - this.opts.maxRequestLog);
    }
    return { url, entry, user };
  }

  /**
   * The user the request acts as, or the fault to act out instead. Throws StatusError (401,
   * impersonation 403) or PlainTextError (impersonation without a user).
   */
  async admit(req: IncomingMessage, url: URL, user: string | undefined): Promise<string | ReplacingFault> {
    if (this.opts.authRequired && user === undefined && !isPublicPath(url.pathname))
      throw errors.unauthorized();
    const action = this.fault?.({
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
    });
    if (action) {
      if (!('delayMs' in action)) return action;
      await sleep(action.delayMs);
    }
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    const authenticated = user ?? 'system:anonymous';
    return this.opts.strict && hasImpersonation(req.headers)
      ? impersonate(this.opts.rbac, authenticated, req.headers, req.url ?? '/')
      : authenticated;
  }
}
