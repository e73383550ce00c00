import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import {
  NOT_MANAGED_MESSAGE,
  type StatusDetails,
  type StatusReason,
  statusObject,
} from '@pullplane/managed-filter';
import { bridgeUpgraded, type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { backendResponseHeaders } from './backend-response-headers.js';
import type { KubeClient } from './kube-client.js';
import type { ManagedGate } from './managed-gate.js';

/** What an agent allows of exec, attach and port-forward (`--enable-exec` and its limits). */
export interface ExecPolicy {
  /** Off by default: every upgrade is refused with 403. */
  enabled: boolean;
  /** Sessions open at once on this agent; more are refused with 429. */
  maxSessions: number;
  /** A session is cut after this long (argocd-agent caps its terminal at 30 minutes). */
  maxDurationMs: number;
  /** A session with no bytes either way for this long is cut; 0: never. */
  idleTimeoutMs: number;
}

export const DEFAULT_EXEC_POLICY: ExecPolicy = {
  enabled: false,
  maxSessions: 20,
  maxDurationMs: 30 * 60_000,
  idleTimeoutMs: 0,
};

/** One session as the agent's audit line (and metrics) see it when it ends. */
export interface SessionRecord {
  requestId: string;
  kind: 'exec' | 'attach' | 'portforward';
  namespace: string;
  pod: string;
  container?: string | undefined;
  command?: string[] | undefined;
  ports?: string[] | undefined;
  /** The user the cluster was asked to act as (allowed impersonation), if any. */
  impersonated?: string | undefined;
  /** The protocol the cluster chose (WebSocket subprotocol or SPDY stream protocol); before a 101, those asked for. */
  protocol: string;
  /** The cluster's answer: 101, or the status of its refusal; 0 when it could not be reached. */
  status: number;
  durationMs: number;
  /** Bytes from the caller to the cluster, and back. */
  bytesIn: number;
  bytesOut: number;
  /** Why it ended, when not by either side closing it. */
  ended?: 'max-duration' | 'idle' | 'error' | undefined;
  error?: string | undefined;
}

export interface KubeSessionsOptions {
  kube: KubeClient;
  /** The managed filter: only pods Argo CD manages take sessions. Absent: every pod. */
  gate: ManagedGate | undefined;
  policy: ExecPolicy;
  logger: Logger;
  /** In refusals (the agent's own name, when configured). */
  agentName?: string | undefined;
  /** Each session that ended (also refused ones), for metrics. */
  onSession?: ((r: SessionRecord) => void) | undefined;
}

const CONNECT_PATH =
  /^\/api\/v1\/namespaces\/([^/?]+)\/pods\/([^/?]+)\/(exec|attach|portforward)(?:\?(.*))?$/;

/** The upgrade protocols the API server serves for these subresources. */
function upgradeKind(upgrade: string): 'websocket' | 'spdy' | undefined {
  const lower = upgrade.toLowerCase();
  if (lower === 'websocket') return 'websocket';
  if (lower.split(',').some((p) => p.trim() === 'spdy/3.1')) return 'spdy';
  return undefined;
}

export interface KubeSessions {
  /** Serves an upgrade request (`head.upgrade` set) the forwarder built the headers for. */
  handle(
    stream: LogicalStream,
    path: string,
    method: string,
    headers: Record<string, string | string[]>,
  ): void;
  /** Sessions open now (and upgrades being set up). */
  readonly active: number;
}

/**
 * exec, attach and port-forward: the one kind of request that becomes a byte stream. The agent
 * upgrades against its own API server with its own credentials (none ever come from the
 * caller), so the cluster's answer — 101 with the protocol it chose, or its Status — goes back
 * as is; after a 101 the bytes flow raw both ways under the tunnel's per-stream credit
 * (`bridgeUpgraded`). Before that: the policy (off unless enabled, the session cap) and the
 * managed filter (only pods Argo CD manages, as for reads). Every session ends in one audit line.
 */
export function createKubeSessions(o: KubeSessionsOptions): KubeSessions {
  let active = 0;
  const who = o.agentName ? `agent ${o.agentName}` : 'this agent';
  return {
    get active() {
      return active;
    },
    handle(stream, path, method, headers) {
      const upgrade = stream.open.head.case === 'http' ? stream.open.head.value.upgrade : '';
      const started = Date.now();
      const m = CONNECT_PATH.exec(path);
      const record: SessionRecord = {
        requestId: stream.open.requestId,
        kind: (m?.[3] ?? 'exec') as SessionRecord['kind'],
        namespace: m ? decodeURIComponent(m[1]!) : '',
        pod: m ? decodeURIComponent(m[2]!) : '',
        protocol: String(
          headers['sec-websocket-protocol'] ?? headers['x-stream-protocol-version'] ?? upgrade,
        ),
        status: 0,
        durationMs: 0,
        bytesIn: 0,
        bytesOut: 0,
      };
      const query = new URLSearchParams(m?.[4] ?? '');
      if (record.kind === 'portforward') record.ports = query.getAll('ports');
      else {
        const container = query.get('container');
        if (container) record.container = container;
        if (record.kind === 'exec') record.command = query.getAll('command');
      }
      const impersonated = headers['impersonate-user'];
      if (typeof impersonated === 'string') record.impersonated = impersonated;

      const finish = (patch: Partial<SessionRecord>) => {
        Object.assign(record, patch, { durationMs: Date.now() - started });
        const level = record.status === 101 ? 'info' : 'warn';
        o.logger[level](
          { ...record },
          `${record.kind} session ${record.status === 101 ? 'ended' : 'refused'}`,
        );
        o.onSession?.(record);
      };
      const refuse = (code: number, reason: StatusReason, message: string, details?: StatusDetails) => {
        stream.respond(code, [{ name: 'Content-Type', value: 'application/json' }]);
        stream.end(JSON.stringify(statusObject(code, reason, message, details)));
        stream.resume();
        finish({ status: code, error: message });
      };

      if (!m || !upgradeKind(upgrade))
        return refuse(
          400,
          'BadRequest',
          `only pods/exec, pods/attach and pods/portforward are upgraded (WebSocket or SPDY/3.1), not ${upgrade || 'this request'}`,
        );
      if (!o.policy.enabled)
        return refuse(
          403,
          'Forbidden',
          `exec, attach and port-forward are disabled on ${who} (enable them with --enable-exec)`,
          { name: record.pod, kind: `pods/${record.kind}` },
        );
      if (active >= o.policy.maxSessions)
        return refuse(
          429,
          'TooManyRequests',
          `${who} already has ${active} exec, attach and port-forward sessions open (the limit, --exec-max-sessions)`,
          { name: record.pod, kind: `pods/${record.kind}` },
        );
      active++;
      let counted = true;
      const release = () => {
        if (counted) active--;
        counted = false;
      };
      const run = async () => {
        if (o.gate) {
          const podPath = `/api/v1/namespaces/${m[1]}/pods/${m[2]}`;
          const pod = await o.kube.getJson(podPath);
          if (pod === undefined) {
            release();
            return refuse(404, 'NotFound', `pods "${record.pod}" not found`, {
              name: record.pod,
              kind: 'pods',
            });
          }
          if ((await o.gate.resolver.forRequest().resolve(pod)) !== 'managed') {
            release();
            return refuse(404, 'NotFound', NOT_MANAGED_MESSAGE, { name: record.pod, kind: 'pods' });
          }
        }
        if (stream.destroyed) return release();
        await upgradeUpstream(stream, method, path, headers, upgrade, record, release, finish);
      };
      run().catch((err: unknown) => {
        release();
        const message = `cluster API upgrade failed: ${err instanceof Error ? err.message : String(err)}`;
        if (!stream.destroyed && !stream.hasResponded) refuse(500, 'InternalError', message);
        else {
          if (!stream.destroyed) stream.reset(TunnelErrorCode.INTERNAL, message);
          finish({ ended: 'error', error: message });
        }
      });
    },
  };

  async function upgradeUpstream(
    stream: LogicalStream,
    method: string,
    path: string,
    headers: Record<string, string | string[]>,
    upgrade: string,
    record: SessionRecord,
    release: () => void,
    finish: (patch: Partial<SessionRecord>) => void,
  ): Promise<void> {
    let settled = false;
    const req = await o.kube.request(
      { method, path, headers: { ...headers, connection: 'Upgrade', upgrade } },
      (res: IncomingMessage) => {
        // The cluster declined to upgrade: its answer (a Status, or the kubelet's text) as is.
        settled = true;
        release();
        const status = res.statusCode ?? 502;
        stream.respond(status, backendResponseHeaders(res));
        // Nothing follows a declined upgrade from the caller: its end is read so the stream closes.
        stream.resume();
        res.pipe(stream);
        res.on('end', () => finish({ status, error: `the cluster answered ${status}` }));
        res.on('error', (err) => {
          if (!stream.destroyed) stream.reset(TunnelErrorCode.INTERNAL, err.message);
        });
      },
    );
    req.on('upgrade', (res: IncomingMessage, socket: Socket, rest: Buffer) => {
      settled = true;
      if (stream.destroyed) {
        release();
        socket.destroy();
        return finish({ status: 101, ended: 'error', error: 'the caller went away during the upgrade' });
      }
      stream.respond(101, backendResponseHeaders(res, { upgraded: true }));
      // What the cluster chose, rather than what the caller offered.
      const chosen = res.headers['sec-websocket-protocol'] ?? res.headers['x-stream-protocol-version'];
      if (typeof chosen === 'string') record.protocol = chosen;
      let ended: SessionRecord['ended'];
      const cut = (why: 'max-duration' | 'idle', message: string) => {
        ended = why;
        if (!stream.destroyed) stream.reset(TunnelErrorCode.CANCELLED, message);
        socket.destroy();
      };
      const maxTimer = setTimeout(
        () => cut('max-duration', `the session reached its maximum duration (${o.policy.maxDurationMs} ms)`),
        o.policy.maxDurationMs,
      );
      let idleTimer: NodeJS.Timeout | undefined;
      const touch = () => {
        if (o.policy.idleTimeoutMs <= 0) return;
        idleTimer?.refresh();
      };
      if (o.policy.idleTimeoutMs > 0) {
        idleTimer = setTimeout(
          () => cut('idle', `the session was idle for ${o.policy.idleTimeoutMs} ms`),
          o.policy.idleTimeoutMs,
        );
        socket.on('data', touch);
        stream.on('data', touch);
      }
      // The stream's bytes are the caller's (in); the socket's are the cluster's (out).
      bridgeUpgraded(socket, stream, {
        head: rest,
        onClose: (s) => {
          clearTimeout(maxTimer);
          clearTimeout(idleTimer);
          release();
          finish({
            status: 101,
            bytesIn: s.bytesOut,
            bytesOut: s.bytesIn,
            ...(ended ? { ended } : s.error ? { ended: 'error' as const, error: s.error.message } : {}),
          });
        },
      });
    });
    req.on('error', (err) => {
      if (settled) return;
      settled = true;
      release();
      const message = `cluster API upgrade failed: ${err.message}`;
      if (stream.destroyed) return finish({ ended: 'error', error: message });
      stream.respond(500, [{ name: 'Content-Type', value: 'application/json' }]);
      stream.end(JSON.stringify(statusObject(500, 'InternalError', message)));
      finish({ status: 500, error: message });
    });
    // The caller gave up before the cluster answered: so does the upgrade.
    stream.once('close', () => {
      if (!settled) req.destroy();
    });
    // The upgrade request has no body; what follows the 101 belongs to the new protocol.
    req.end();
  }
}
