import { PassThrough, Readable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import { context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import {
  decideRequest,
  eventVerdict,
  isEventResource,
  isJsonContentType,
  isManagedFilterError,
  ManagedFilterError,
  ManagedFilterErrorCode,
  NOT_MANAGED_MESSAGE,
  negotiateAccept,
  parseKubePath,
  type RequestDecision,
  responseFilterFor,
  rowObject,
  statusObject,
} from '@pullplane/managed-filter';
import { IMPERSONATION_HEADER_PREFIX, isStrippedRequestHeader } from '@pullplane/names';
import { requestHasBody } from '@pullplane/proto';
import { type RequestLog, requestLog } from '@pullplane/telemetry';
import { Attr, contextFromTraceparent, traceHeaders } from '@pullplane/tracing';
import { isTunnelError, type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { parse as parseYaml } from 'yaml';
import {
  type BackendCall,
  type BackendCallHandler,
  type BackendResponse,
  SAFE_METHODS,
} from './backend-call.js';
import { backendResponseHeaders } from './backend-response-headers.js';
import { KubeClient } from './kube-client.js';
import {
  createKubeSessions,
  DEFAULT_EXEC_POLICY,
  type ExecPolicy,
  type SessionRecord,
} from './kube-sessions.js';
import { ManagedGate } from './managed-gate.js';

/**
 * Request headers never forwarded to the API server: hop-by-hop, credentials and identity
 * (`isStrippedRequestHeader`). The resource proxy strips them too; stripping them here as well
 * means a cluster API server that trusts a front proxy (X-Remote-User, X-Remote-Group,
 * X-Remote-Extra-*) can never be handed an identity through the tunnel. Responses lose their
 * hop-by-hop headers and `set-cookie` (`backendResponseHeaders`).
 */

/** Bodies the managed rule must read before deciding (create, replace, server-side apply). */
const MAX_DECISION_BODY = 16 * 1024 * 1024;

export interface KubeForwarderOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  /** `managed`: only what Argo CD manages is visible (the default); `none`: everything. */
  filter?: 'managed' | 'none';
  /** Where `argocd-cm` lives (tracking method). */
  argocdNamespace?: string;
  /**
   * Pass Impersonate-* headers on (the resource proxy forwards them only for callers it
   * allows). Off by default: the agent's service account must also be allowed to impersonate.
   */
  allowImpersonation?: boolean;
  maxSockets?: number;
  /** Set when traces are exported: a client span per cluster API call. */
  tracer?: Tracer | undefined;
  /** This agent's name, on its spans and in refusals. */
  agentName?: string;
  /** exec, attach and port-forward: off unless enabled, with their limits. */
  exec?: Partial<ExecPolicy>;
  /** Each exec, attach or port-forward session that ended or was refused. */
  onSession?: (r: SessionRecord) => void;
}

export interface KubeForwarder {
  handle(stream: LogicalStream): void;
  /** exec, attach and port-forward sessions open now. */
  readonly activeSessions: number;
  start(): Promise<void>;
  stop(): void;
}

function respondStatus(
  stream: LogicalStream,
  code: number,
  reason: string,
  message: string,
  details?: unknown,
): void {
  const body = JSON.stringify(statusObject(code, reason, message, details as never));
  stream.respond(code, [{ name: 'Content-Type', value: 'application/json' }]);
  stream.end(body);
}

/**
 * Answers a named GET only if the object the cluster returned is managed (for a one-row Table,
 * the row's object); otherwise the seed's 404. The body is a single object, so buffering it
 * is bounded (MAX_DECISION_BODY, checked as it arrives).
 */
async function judgeObject(
  res: BackendResponse,
  body: Buffer,
  stream: LogicalStream,
  gate: ManagedGate,
  target: { resource: string; group: string; name: string; events: boolean },
  log: RequestLog,
): Promise<void> {
  try {
    const doc = JSON.parse(body.toString('utf8')) as { kind?: string; rows?: unknown[] };
    const obj = doc.kind === 'Table' ? rowObject(doc.rows?.[0]) : doc;
    const check = gate.resolver.forRequest();
    const verdict = target.events ? await eventVerdict(obj, check) : await check.resolve(obj);
    if (verdict !== 'managed') {
      const details = {
        kind: target.resource,
        name: target.name,
        ...(target.group ? { group: target.group } : {}),
      };
      return respondStatus(stream, 404, 'NotFound', NOT_MANAGED_MESSAGE, details);
    }
    stream.respond(res.status, backendResponseHeaders(res));
    stream.end(body);
  } catch (err) {
    refuseUnjudged(stream, log, err);
  }
}

function refuseUnjudged(stream: LogicalStream, log: RequestLog, err: unknown): void {
  log.warn({ err: String(err) }, 'could not judge the object; refusing');
  if (!stream.destroyed) respondStatus(stream, 404, 'NotFound', NOT_MANAGED_MESSAGE);
}

/** The value of a header in raw name/value pairs (first one; names compared lower-case). */
function rawHeader(raw: readonly string[], name: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) return raw[i + 1];
  return undefined;
}

/** Reads the request side to its end without touching the response side (no async iterator:
 *  it would destroy the whole duplex when done). */
function readBody(stream: LogicalStream): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > MAX_DECISION_BODY) {
        stream.off('data', onData);
        stream.pause();
        resolve(undefined);
        return;
      }
      chunks.push(c);
    };
    stream.on('data', onData);
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

function parseBody(body: Buffer, contentType: string | undefined): unknown {
  const text = body.toString('utf8');
  try {
    return /yaml/i.test(contentType ?? '') ? parseYaml(text) : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Executes HTTP-like logical streams against the local Kubernetes API with the credentials
 * @kubernetes/client-node loaded. Bodies stream both ways (watches, followed logs); with the
 * managed filter on, requests are checked first and responses filtered item by item.
 */
export function createKubeForwarder(opts: KubeForwarderOptions): KubeForwarder {
  const kube = new KubeClient(opts.kubeConfig, {
    ...(opts.maxSockets ? { maxSockets: opts.maxSockets } : {}),
    onRefreshError: (err) =>
      opts.logger.warn(
        { err: String(err) },
        'could not prepare the cluster credentials again; keeping the previous ones',
      ),
  });
  const cluster = clusterAddress(opts.kubeConfig);
  const filtering = (opts.filter ?? 'managed') === 'managed';
  const gate = filtering
    ? new ManagedGate(kube, { argocdNamespace: opts.argocdNamespace ?? 'argocd', logger: opts.logger })
    : undefined;
  const sessions = createKubeSessions({
    kube,
    gate,
    policy: { ...DEFAULT_EXEC_POLICY, ...opts.exec },
    logger: opts.logger,
    agentName: opts.agentName,
    onSession: opts.onSession,
  });

  const forward = async (stream: LogicalStream, log: RequestLog, span: Span | undefined) => {
    const head = stream.open.head;
    if (head.case !== 'http') return;
    const { method, headers } = head.value;
    let path = head.value.path;
    const reqHeaders: Record<string, string | string[]> = {};
    for (const h of headers) {
      const name = h.name.toLowerCase();
      if (
        isStrippedRequestHeader(name) ||
        (name.startsWith(IMPERSONATION_HEADER_PREFIX) && !opts.allowImpersonation)
      )
        continue;
      const prev = reqHeaders[name];
      reqHeaders[name] = prev === undefined ? h.value : ([] as string[]).concat(prev, h.value);
    }
    const contentType = reqHeaders['content-type'] as string | undefined;
    // The API server continues the trace (it accepts W3C traceparent): under our span when we
    // trace, else under whatever the Open frame carried.
    const tc = span ? traceHeaders(span) : stream.open;
    if (tc.traceparent) {
      reqHeaders.traceparent = tc.traceparent;
      if (tc.tracestate) reqHeaders.tracestate = tc.tracestate;
    }
    // exec, attach and port-forward: a session of raw bytes, under its own rules.
    if (head.value.upgrade) return sessions.handle(stream, path, method, reqHeaders);

    let decision: RequestDecision | undefined;
    let postCheck: { resource: string; group: string; name: string; events: boolean } | undefined;
    let buffered: Buffer | undefined;
    if (gate) {
      let parsed: ReturnType<typeof parseKubePath>;
      try {
        parsed = parseKubePath(method, path);
      } catch (err) {
        if (!isManagedFilterError(err)) throw err;
        return respondStatus(stream, err.httpStatus, err.reason, err.message);
      }
      // A named GET is judged on the object the cluster returns: one round trip instead of a
      // check GET followed by the real one.
      if (
        parsed.kind === 'resource' &&
        parsed.verb === 'get' &&
        parsed.name &&
        (parsed.subresource ?? 'status') === 'status'
      ) {
        postCheck = {
          resource: parsed.resource,
          group: parsed.group,
          name: parsed.name,
          events: isEventResource(parsed.group, parsed.resource),
        };
        reqHeaders.accept = negotiateAccept(reqHeaders.accept as string | undefined);
      }
      const needsBody =
        requestHasBody(stream.open) && (method === 'POST' || method === 'PUT' || method === 'PATCH');
      if (needsBody) {
        buffered = await readBody(stream);
        if (!buffered)
          return respondStatus(stream, 413, 'RequestEntityTooLarge', 'request body too large to check');
      }
      if (!postCheck)
        decision = await decideRequest(parsed, {
          resolver: gate.resolver.forRequest(),
          getTarget: (t) => kube.getJson(t.path),
          ...(buffered ? { bodyObject: parseBody(buffered, contentType) } : {}),
          ...(contentType ? { contentType } : {}),
          ...(typeof reqHeaders.accept === 'string' ? { accept: reqHeaders.accept } : {}),
        });
      if (decision?.action === 'reject') {
        log.debug(
          { status: decision.status, message: decision.message },
          'refused by the managed-resource rule',
        );
        return respondStatus(stream, decision.status, decision.reason, decision.message, decision.details);
      }
      if (decision) {
        path = decision.path;
        if (decision.filter !== 'none')
          reqHeaders.accept = negotiateAccept(reqHeaders.accept as string | undefined);
      }
    }
    // A buffered body has its length; a streamed one without a length goes chunked.
    if (buffered) reqHeaders['content-length'] = String(buffered.length);

    // The requester gave up (or its timeout passed) while the request was being checked: the
    // cluster is not asked at all.
    if (stream.destroyed) return;
    let call: BackendCall | undefined;
    let responseComplete = false;
    /** Answered here, the call cut short on purpose: its error (the abort) is no failure to report. */
    let answeredHere = false;
    /** What the response's chunks go to, once its head has said how to answer. */
    let sink: ((chunk: Buffer) => boolean) | undefined;
    let finish: (() => void) | undefined;
    // A request with nothing to send again may be sent again: once, when the API server closed
    // a kept-alive connection just as the request went out on it (as Go's transport retries).
    const streamsBody = !buffered && requestHasBody(stream.open);
    const onResend =
      !buffered && !streamsBody && SAFE_METHODS.has(method)
        ? (err: Error) =>
            log.debug(
              { err: err.message },
              'kept-alive cluster API connection closed under the request; sent again',
            )
        : undefined;
    const handler: BackendCallHandler = {
      onResponse: (res) => {
        const status = res.status;
        const responseType = rawHeader(res.rawHeaders, 'content-type');
        const json = isJsonContentType(responseType);
        const ok = status >= 200 && status < 300;
        // A body the rule must read that is not JSON (a server that ignored the Accept the agent
        // set) is refused, never passed on unread: that would show every object it holds.
        if (
          gate &&
          ok &&
          !json &&
          (postCheck || (decision?.action === 'forward' && decision.filter !== 'none'))
        ) {
          answeredHere = true;
          responseComplete = true;
          call?.abort();
          if (postCheck) {
            refuseUnjudged(
              stream,
              log,
              new Error(`the cluster answered ${responseType ?? 'with no content type'}`),
            );
            return;
          }
          const err = new ManagedFilterError(
            ManagedFilterErrorCode.MALFORMED_RESPONSE,
            `the cluster answered ${responseType ?? 'with no content type'}, which the managed-resource rule cannot read`,
          );
          log.warn({ contentType: responseType }, err.message);
          respondStatus(stream, err.httpStatus, err.reason, err.message);
          return;
        }
        if (gate && postCheck && ok && json) {
          // The object is judged whole: gathered here, bounded as it arrives.
          const chunks: Buffer[] = [];
          let size = 0;
          sink = (c) => {
            size += c.length;
            if (size > MAX_DECISION_BODY) {
              sink = () => true;
              finish = undefined;
              answeredHere = true;
              call?.abort();
              refuseUnjudged(stream, log, new Error('object too large to check'));
              return true;
            }
            chunks.push(c);
            return true;
          };
          finish = () => void judgeObject(res, Buffer.concat(chunks), stream, gate, postCheck, log);
          return;
        }
        const filter =
          gate && decision?.action === 'forward' && status >= 200 && status < 300 && json
            ? responseFilterFor(decision, gate.resolver.forRequest())
            : undefined;
        // A filtered body has a different length.
        stream.respond(status, backendResponseHeaders(res, { bodyRewritten: filter !== undefined }));
        if (!filter) {
          // The hot path: chunks written straight on, the call paused while the tunnel is full.
          sink = (c) => {
            if (stream.write(c)) return true;
            stream.once('drain', () => call?.resume());
            return false;
          };
          finish = () => stream.end();
          return;
        }
        const body = new Readable({ read: () => call?.resume() });
        sink = (c) => body.push(c);
        finish = () => body.push(null);
        const filtered = Readable.from(filter(body));
        // pipe() rather than pipeline(): pipeline allocates an AbortController (and an
        // AbortError on completion) per call.
        filtered.on('error', (err: Error) => {
          if (!stream.destroyed)
            stream.reset(TunnelErrorCode.INTERNAL, `cluster API stream failed: ${err.message}`);
          call?.abort();
        });
        filtered.pipe(stream);
      },
      onData: (chunk) => (sink ? sink(chunk) : true),
      onEnd: () => {
        responseComplete = true;
        finish?.();
      },
      onError: (err, responded) => {
        if (stream.destroyed || answeredHere) return;
        if (responded) {
          stream.reset(TunnelErrorCode.INTERNAL, `cluster API stream failed: ${err.message}`);
          return;
        }
        span?.setAttribute(Attr.errorType, (err as NodeJS.ErrnoException).code ?? err.name);
        log.warn({ err: err.message }, 'cluster API request failed');
        stream.reset(TunnelErrorCode.INTERNAL, `cluster API request failed: ${err.message}`);
      },
    };
    // A streamed body goes through its own pipe: the call destroys what it read, and the
    // logical stream's response side is still in use.
    const body = buffered ?? (streamsBody ? stream.pipe(new PassThrough()) : undefined);
    // A bodiless request's side still has to be read to its end, or the stream never closes
    // (and its span never ends).
    if (body === undefined) stream.resume();
    call = await kube.call({ method, path, headers: reqHeaders }, body, handler, onResend);
    // The requester went away while the call was being set up.
    if (stream.destroyed) call.abort();
    // The requester went away (client closed a watch, its timeout passed): stop the upstream
    // call too.
    stream.on('close', () => {
      if (!responseComplete) call?.abort();
    });
  };

  return {
    get activeSessions() {
      return sessions.active;
    },
    handle(stream) {
      const head = stream.open.head;
      if (head.case !== 'http') {
        stream.reset(
          TunnelErrorCode.REFUSED,
          `kube forwarder cannot serve ${head.case ?? 'an empty'} request`,
        );
        return;
      }
      const span = opts.tracer ? startCallSpan(opts.tracer, stream, cluster, opts.agentName) : undefined;
      const log = requestLog(opts.logger, () => ({
        requestId: stream.open.requestId,
        method: head.value.method,
        path: head.value.path,
      }));
      const run = () => forward(stream, log, span);
      const running = span ? context.with(trace.setSpan(context.active(), span), run) : run();
      running.catch((err: unknown) => {
        // The caller went away first (its stream is gone): the request was ours to end, not a fault.
        if (stream.destroyed) {
          log.debug({ err: String(err) }, 'cluster API request ended with its caller');
          return;
        }
        log.error({ err: String(err) }, 'could not serve cluster API request');
        stream.reset(TunnelErrorCode.INTERNAL, `cluster API request failed: ${String(err)}`);
      });
    },
    async start() {
      await gate?.start();
    },
    stop() {
      gate?.stop();
      kube.close();
    },
  };
}

/** server.address / server.port of the cluster API, for spans. */
function clusterAddress(kc: KubeConfig): { host: string; port: number } | undefined {
  const server = kc.getCurrentCluster()?.server;
  if (!server) return undefined;
  try {
    const u = new URL(server);
    return { host: u.hostname, port: Number(u.port) || (u.protocol === 'http:' ? 80 : 443) };
  } catch {
    return undefined;
  }
}

/**
 * The agent's span for one cluster API call, child of the gateway's (Open.traceparent). It
 * ends with the logical stream; the status is the one answered (the cluster's, or the managed
 * rule's refusal), recorded where the response head is sent.
 */
function startCallSpan(
  tracer: Tracer,
  stream: LogicalStream,
  cluster: { host: string; port: number } | undefined,
  agentName: string | undefined,
): Span {
  const head = stream.open.head;
  const method = head.case === 'http' ? head.value.method : 'GET';
  const path = head.case === 'http' ? head.value.path.split('?', 1)[0]! : '';
  const span = tracer.startSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [Attr.httpMethod]: method,
        [Attr.urlPath]: path,
        ...(cluster ? { [Attr.serverAddress]: cluster.host, [Attr.serverPort]: cluster.port } : {}),
        ...(agentName ? { [Attr.agentName]: agentName } : {}),
        ...(stream.open.requestId ? { [Attr.requestId]: stream.open.requestId } : {}),
      },
    },
    contextFromTraceparent(stream.open.traceparent, stream.open.tracestate),
  );
  // Every answer goes through respond(): the one place that sees the status, whoever chose it.
  const respond = stream.respond.bind(stream);
  stream.respond = (status, headers) => {
    span.setAttribute(Attr.httpStatus, status);
    // Client spans: 4xx and 5xx are failures (semantic conventions).
    if (status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
    respond(status, headers);
  };
  stream.once('close', () => {
    if (stream.errored) {
      span.setAttribute(Attr.errorType, isTunnelError(stream.errored) ? stream.errored.code : 'INTERNAL');
      span.setStatus({ code: SpanStatusCode.ERROR, message: stream.errored.message });
    }
    span.end();
  });
  return span;
}
