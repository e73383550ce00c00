import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { PlainTextError } from '../impersonation.js';
import type { RequestAdmission } from '../request-admission.js';
import { resolveRoute } from '../request-path.js';
import type { ResourceRegistry } from '../resource-registry.js';
import { errors, StatusError } from '../status.js';
import { writeRawResponse, writeStatusResponse } from './raw-response.js';
import { handleStreamUpgrade, type StreamContext } from './stream-upgrade.js';

export interface UpgradeListenerDeps {
  admission: RequestAdmission;
  registry: ResourceRegistry;
  streams: StreamContext;
  /** The plain request handler, for upgrade requests the API server answers without upgrading. */
  servePlain(req: IncomingMessage, res: ServerResponse): void;
  /** Sockets a `hang` fault holds (destroyed on close). */
  hung: Set<Duplex>;
}

const CONNECT = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/(exec|attach|portforward)$/;

/**
 * Node's 'upgrade' listener. exec, attach and portforward go to the streaming endpoints; any
 * other request that merely asks for an upgrade (an `h2c` probe) is answered as a plain request,
 * as the API server ignores upgrades it does not serve.
 */
export function upgradeListener(
  deps: UpgradeListenerDeps,
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    socket.on('error', () => {
      // A client that vanished mid-handshake; the session (if any) sees the close.
    });
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    if (!CONNECT.test(path)) {
      const res = new ServerResponse(req);
      res.shouldKeepAlive = false;
      res.assignSocket(socket as Socket);
      res.on('finish', () => {
        res.detachSocket(socket as Socket);
        socket.end();
      });
      deps.servePlain(req, res);
      return;
    }
    void serveUpgrade(deps, req, socket, head);
  };
}

async function serveUpgrade(deps: UpgradeListenerDeps, req: IncomingMessage, socket: Duplex, head: Buffer) {
  const { url, entry, user } = deps.admission.begin(req);
  try {
    const admitted = await deps.admission.admit(req, url, user);
    if (typeof admitted !== 'string') {
      // An upgrade never gets a body to stall in: it hangs as a whole.
      if ('hang' in admitted || 'stallBody' in admitted) {
        deps.hung.add(socket);
        socket.on('close', () => deps.hung.delete(socket));
      } else if ('destroy' in admitted) socket.destroy();
      else {
        const body = admitted.body ?? errors.internal('injected fault').toStatus();
        writeRawResponse(
          socket,
          admitted.status,
          { 'Content-Type': 'application/json', ...admitted.headers },
          typeof body === 'string' ? body : JSON.stringify(body),
        );
        entry.status = admitted.status;
      }
      return;
    }
    const route = resolveRoute(deps.registry, url.pathname);
    if (route.kind !== 'resource') throw errors.notFoundPath();
    entry.status = await handleStreamUpgrade(
      deps.streams,
      req,
      socket,
      head,
      route,
      url.searchParams,
      admitted,
    );
  } catch (err) {
    if (err instanceof PlainTextError) {
      writeRawResponse(socket, err.code, { 'Content-Type': 'text/plain; charset=utf-8' }, err.message);
      entry.status = err.code;
      return;
    }
    const status = err instanceof StatusError ? err : errors.internal((err as Error).message ?? String(err));
    writeStatusResponse(socket, status);
    entry.status = status.code;
  }
}
