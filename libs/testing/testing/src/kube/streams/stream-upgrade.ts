import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { createWebSocketStream, type WebSocket, WebSocketServer } from 'ws';
import type { KubeApi } from '../kube-api.js';
import { type RbacRules, verbOf } from '../rbac.js';
import type { ResourceRoute } from '../request-path.js';
import { errors } from '../status.js';
import type { KubeObject } from '../types.js';
import { type CommandChannels, runAttach, runExec } from './command-runner.js';
import { COMMAND_SPDY_PROTOCOLS, serveCommandOverSpdy } from './command-spdy.js';
import type { CommandOutcome } from './command-status.js';
import {
  COMMAND_WS_PROTOCOLS,
  type CommandStreamOptions,
  refuseOverWebSocket,
  serveCommandOverWebSocket,
} from './command-ws.js';
import { containerRunning, locateContainer, type PodRuntimes, requireNode } from './pod-runtime.js';
import type { PortForwarder } from './port-forward.js';
import {
  PORT_FORWARD_PROTOCOL,
  PORT_FORWARD_WS_PROTOCOLS,
  servePortForwardSpdy,
  servePortForwardWebSocket,
} from './port-forward-serve.js';
import { writeRawResponse, writeTextResponse } from './raw-response.js';
import { SpdySession } from './spdy-session.js';
import type { StreamSession, StreamSessions } from './stream-sessions.js';

/** What the streaming endpoints need from the fake API server. */
export interface StreamContext {
  api: KubeApi;
  rbac: RbacRules;
  gitVersion: string;
  runtimes: PodRuntimes;
  forwarder: PortForwarder;
  sessions: StreamSessions;
  streamCreationTimeoutMs: number;
}

const CONNECT_SUBRESOURCES = new Set(['exec', 'attach', 'portforward']);
const TUNNEL_PREFIX = 'SPDY/3.1+';
const chosenProtocol = new WeakMap<IncomingMessage, string>();
const wss = new WebSocketServer({
  noServer: true,
  clientTracking: false,
  maxPayload: 16 * 1024 * 1024,
  perMessageDeflate: false,
});
wss.on('headers', (headers: string[], req: IncomingMessage) => {
  const protocol = chosenProtocol.get(req);
  if (protocol) headers.push(`Sec-WebSocket-Protocol: ${protocol}`);
});

/** A refusal the kubelet answers with plain text (the API server passes it through). */
interface KubeletRefusal {
  code: number;
  text: string;
}

function csv(value: string | string[] | undefined): string[] {
  const all = Array.isArray(value) ? value.join(',') : (value ?? '');
  return all
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function isWebSocketRequest(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** Go's strconv.ParseBool, which the API server's query decoding uses. */
function queryBool(params: URLSearchParams, name: string): boolean {
  const v = params.get(name);
  if (v === null || v === '') return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw errors.badRequest(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
}

/** From Kubernetes 1.35 a WebSocket upgrade (a GET) also needs `create` on the subresource. */
function createNeededForWebSocket(gitVersion: string): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(gitVersion);
  return m !== null && (Number(m[1]) > 1 || Number(m[2]) >= 35);
}

/**
 * Completes the WebSocket handshake with an already chosen subprotocol ('' for none); resolves with
 * the socket, or undefined when the handshake failed (ws answered it). ws checks subprotocols as
 * RFC 7230 tokens, which `SPDY/3.1+portforward.k8s.io` is not (Go's servers take it), so ws does
 * not see the client's list; the answer header is added as ws writes the 101.
 */
function accept(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
): Promise<WebSocket | undefined> {
  delete req.headers['sec-websocket-protocol'];
  if (protocol !== '') chosenProtocol.set(req, protocol);
  return new Promise((resolve) => {
    const failed = () => resolve(undefined);
    socket.once('close', failed);
    wss.handleUpgrade(req, socket, head, (ws) => {
      socket.off('close', failed);
      resolve(ws);
    });
  });
}

/** Upgrades, then serves in the background; resolves with the status the handshake gave. */
async function upgradeWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
  serve: (ws: WebSocket) => Promise<void>,
): Promise<number> {
  const ws = await accept(req, socket, head, protocol);
  if (!ws) return 400;
  void serve(ws);
  return 101;
}

/**
 * httpstream.Handshake: the first protocol the client lists that the server supports; when there
 * is none, the refusal is written and its status code returned instead.
 */
function negotiateSpdy(req: IncomingMessage, socket: Duplex, supported: string[]): string | number {
  const offered = csv(req.headers['x-stream-protocol-version']);
  if (offered.length === 0) {
    writeTextResponse(
      socket,
      400,
      'unable to upgrade: header X-Stream-Protocol-Version does not exist in request',
    );
    return 400;
  }
  const chosen = offered.find((p) => supported.includes(p));
  if (chosen) return chosen;
  writeTextResponse(
    socket,
    403,
    `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`,
    { 'X-Accepted-Stream-Protocol-Versions': supported },
  );
  return 403;
}

/** Answers 101 with SPDY/3.1 and starts a server session on the socket. */
function upgradeSpdy(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
): SpdySession | undefined {
  if (!(req.headers.upgrade ?? '').toLowerCase().includes('spdy/3.1')) {
    writeTextResponse(socket, 400, 'unable to upgrade: missing upgrade headers in request');
    return undefined;
  }
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\nDate: ${new Date().toUTCString()}\r\n\r\n`,
  );
  if (head.length > 0) socket.unshift(head);
  return new SpdySession(socket, { role: 'server' });
}

/**
 * An upgrade request to the API server: `pods/exec`, `pods/attach` and `pods/portforward` over
 * WebSocket (v5 translated as the API server does, older protocols as the kubelet serves them,
 * port-forward tunnelled as SPDY inside the WebSocket) or SPDY/3.1. Checks come in the API
 * server's order: RBAC, method, the pod, the container and node; then the kubelet's.
 * Returns the HTTP status given (101 when upgraded); throws StatusError for API server refusals.
 */
export async function handleStreamUpgrade(
  ctx: StreamContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  route: ResourceRoute,
  params: URLSearchParams,
  user: string,
): Promise<number> {
  const { type, name, subresource } = route;
  const namespace = route.namespace ?? '';
  if (
    type.group !== '' ||
    type.resource !== 'pods' ||
    !name ||
    !subresource ||
    !CONNECT_SUBRESOURCES.has(subresource)
  ) {
    throw errors.badRequest(
      'the fake API server upgrades only pods/exec, pods/attach and pods/portforward requests',
    );
  }
  const method = req.method ?? 'GET';
  const websocket = isWebSocketRequest(req);
  const attrs = { apiGroup: '', resource: 'pods', subresource, namespace, name };
  ctx.rbac.authorize(user, { ...attrs, verb: verbOf(method, true, false) });
  if (websocket && createNeededForWebSocket(ctx.gitVersion))
    ctx.rbac.authorize(user, { ...attrs, verb: 'create' });
  if (method !== 'GET' && method !== 'POST') throw errors.methodNotAllowed();
  const pod = ctx.api.get(type, namespace, name);
  if (subresource === 'portforward') return portForward(ctx, req, socket, head, pod, params, user);

  const opts: CommandStreamOptions = {
    stdin: queryBool(params, 'stdin'),
    stdout: queryBool(params, 'stdout'),
    stderr: queryBool(params, 'stderr'),
    tty: queryBool(params, 'tty'),
  };
  const container = locateContainer(pod, params.get('container') ?? '');
  const command = subresource === 'exec' ? params.getAll('command') : undefined;
  let refusal: KubeletRefusal | undefined;
  if (!opts.stdin && !opts.stdout && !opts.stderr) {
    refusal = { code: 400, text: 'you must specify at least 1 of stdin, stdout, stderr' };
  } else if (!containerRunning(pod, container.name)) {
    refusal = {
      code: 500,
      text:
        subresource === 'exec'
          ? `container not found (${JSON.stringify(container.name)})`
          : `container ${container.name} not found in pod ${name}_${namespace}`,
    };
  }
  const start = (transport: 'websocket' | 'spdy', protocol: string) =>
    ctx.sessions.start({
      kind: subresource as 'exec' | 'attach',
      transport,
      namespace,
      pod: name,
      container: container.name,
      command,
      user,
      protocol,
      tty: opts.tty,
    });
  const run = (session: StreamSession) => (ch: CommandChannels) => {
    const runtime = ctx.runtimes.container(pod, container);
    return command ? runExec(runtime, command, ch, session) : runAttach(runtime, ch, session);
  };
  const done = (session: StreamSession, outcome: CommandOutcome | undefined) => {
    if (outcome?.kind === 'error') session.error = outcome.message;
    ctx.sessions.end(session);
  };

  if (websocket) {
    const offered = csv(req.headers['sec-websocket-protocol']);
    if (offered.includes('v5.channel.k8s.io')) {
      // The API server's translator: WebSocket to the client, SPDY to the kubelet.
      return upgradeWebSocket(req, socket, head, 'v5.channel.k8s.io', async (ws) => {
        const session = start('websocket', 'v5.channel.k8s.io');
        const unregister = ctx.sessions.onClose(() => ws.terminate());
        if (refusal) {
          session.error = `unable to upgrade connection: ${refusal.text}`;
          await refuseOverWebSocket(ws, opts, session.error);
          ctx.sessions.end(session);
        } else {
          done(
            session,
            await serveCommandOverWebSocket(ws, 'v5.channel.k8s.io', opts, 'translator', run(session)),
          );
        }
        unregister();
      });
    }
    if (refusal) {
      writeTextResponse(socket, refusal.code, refusal.text);
      return refusal.code;
    }
    const protocol = offered.length === 0 ? '' : offered.find((p) => COMMAND_WS_PROTOCOLS.includes(p));
    if (protocol === undefined) {
      writeRawResponse(socket, 403, {}, '');
      return 403;
    }
    return upgradeWebSocket(req, socket, head, protocol, async (ws) => {
      const session = start('websocket', protocol);
      const unregister = ctx.sessions.onClose(() => ws.terminate());
      done(
        session,
        await serveCommandOverWebSocket(ws, protocol || 'channel.k8s.io', opts, 'kubelet', run(session)),
      );
      unregister();
    });
  }

  if (refusal) {
    writeTextResponse(socket, refusal.code, refusal.text);
    return refusal.code;
  }
  const protocol = negotiateSpdy(req, socket, COMMAND_SPDY_PROTOCOLS);
  if (typeof protocol === 'number') return protocol;
  const spdy = upgradeSpdy(req, socket, head, protocol);
  if (!spdy) return 400;
  const session = start('spdy', protocol);
  const unregister = ctx.sessions.onClose(() => spdy.destroy());
  void serveCommandOverSpdy(spdy, protocol, opts, ctx.streamCreationTimeoutMs, run(session)).then(
    (outcome) => {
      done(session, outcome);
      unregister();
    },
  );
  return 101;
}

function parsePorts(params: URLSearchParams): number[] {
  const ports: number[] = [];
  for (const value of params.getAll('ports')) {
    for (const p of value.split(',')) {
      const n = Number(p);
      if (!/^\d+$/.test(p) || n > 65535)
        throw errors.badRequest(`unable to parse ${JSON.stringify(p)} as a port`);
      if (n < 1) throw errors.badRequest(`port ${JSON.stringify(p)} must be > 0`);
      ports.push(n);
    }
  }
  return ports;
}

async function portForward(
  ctx: StreamContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  pod: KubeObject,
  params: URLSearchParams,
  user: string,
): Promise<number> {
  requireNode(pod);
  const ports = parsePorts(params);
  const start = (transport: 'websocket' | 'spdy', protocol: string, requested: number[] = []) =>
    ctx.sessions.start({
      kind: 'portforward',
      transport,
      namespace: pod.metadata.namespace ?? '',
      pod: pod.metadata.name ?? '',
      user,
      protocol,
      tty: false,
      ports: requested,
    });
  if (isWebSocketRequest(req)) {
    const offered = csv(req.headers['sec-websocket-protocol']);
    const tunnelled = offered.filter((p) => p.startsWith(TUNNEL_PREFIX) && p.endsWith('.k8s.io'));
    if (tunnelled.length > 0) {
      // The API server's tunnel: SPDY to the kubelet, carried inside WebSocket messages.
      const spdyOffered = tunnelled.map((p) => p.slice(TUNNEL_PREFIX.length));
      if (!spdyOffered.includes(PORT_FORWARD_PROTOCOL)) {
        writeTextResponse(
          socket,
          403,
          `unable to upgrade: unable to negotiate protocol: client supports [${spdyOffered.join(' ')}], server accepts [${PORT_FORWARD_PROTOCOL}]`,
        );
        return 403;
      }
      const protocol = `${TUNNEL_PREFIX}${PORT_FORWARD_PROTOCOL}`;
      return upgradeWebSocket(req, socket, head, protocol, async (ws) => {
        const session = start('websocket', protocol);
        const spdy = new SpdySession(createWebSocketStream(ws), { role: 'server' });
        const unregister = ctx.sessions.onClose(() => ws.terminate());
        await servePortForwardSpdy(spdy, pod, ctx.forwarder, session, ctx.streamCreationTimeoutMs);
        ctx.sessions.end(session);
        unregister();
      });
    }
    if (ports.length === 0) {
      writeTextResponse(socket, 400, 'query parameter "port" is required');
      return 400;
    }
    const protocol = offered.length === 0 ? '' : offered.find((p) => PORT_FORWARD_WS_PROTOCOLS.includes(p));
    if (protocol === undefined) {
      writeRawResponse(socket, 403, {}, '');
      return 403;
    }
    return upgradeWebSocket(req, socket, head, protocol, async (ws) => {
      const session = start('websocket', protocol, ports);
      const unregister = ctx.sessions.onClose(() => ws.terminate());
      await servePortForwardWebSocket(ws, protocol, ports, pod, ctx.forwarder, session);
      ctx.sessions.end(session);
      unregister();
    });
  }
  const protocol = negotiateSpdy(req, socket, [PORT_FORWARD_PROTOCOL]);
  if (typeof protocol === 'number') return protocol;
  const spdy = upgradeSpdy(req, socket, head, protocol);
  if (!spdy) return 400;
  const session = start('spdy', protocol);
  const unregister = ctx.sessions.onClose(() => spdy.destroy());
  void servePortForwardSpdy(spdy, pod, ctx.forwarder, session, ctx.streamCreationTimeoutMs).then(() => {
    ctx.sessions.end(session);
    unregister();
  });
  return 101;
}
