import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { KubeObject } from '../types.js';
import { PodHttpServers } from './pod-http-server.js';
import { allContainers, sandboxId } from './pod-runtime.js';

/** Where a test routes a pod's port: a TCP listener of its own. */
export interface PodPortTarget {
  host: string;
  port: number;
}

/** A failed forward, worded as the kubelet reports it on the error stream. */
export class ForwardError extends Error {}

/**
 * The fake kubelet's port forwarding: connects to what listens on a pod's port. A test-registered
 * target wins; otherwise each TCP port the pod's containers declare has the built-in HTTP server
 * (pod-http-server.ts); any other port refuses the connection.
 */
export class PortForwarder {
  private readonly targets = new Map<string, PodPortTarget>();
  readonly http = new PodHttpServers();

  setTarget(namespace: string, pod: string, port: number, target: PodPortTarget | undefined): void {
    const key = `${namespace}/${pod}/${port}`;
    if (target) this.targets.set(key, target);
    else this.targets.delete(key);
  }

  /** Opens a connection to `port` inside `pod`. */
  async connect(pod: KubeObject, port: number): Promise<Socket> {
    const namespace = pod.metadata.namespace ?? '';
    const name = pod.metadata.name ?? '';
    let target = this.targets.get(`${namespace}/${name}/${port}`);
    if (!target && allContainers(pod).some((c) => c.ports.includes(port))) {
      const local = await this.http.address(pod.metadata.uid ?? '', { namespace, pod: name, port });
      target = { host: '127.0.0.1', port: local };
    }
    const refused = () => {
      const sandbox = sandboxId(pod);
      return new ForwardError(
        `error forwarding port ${port} to pod ${sandbox}, uid : failed to execute portforward in network namespace "/var/run/netns/cni-${(pod.metadata.uid ?? '').slice(0, 36)}": failed to connect to localhost:${port} inside namespace "${sandbox}", IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused IPv6 dial tcp6 [::1]:${port}: connect: connection refused `,
      );
    };
    if (!target || port < 1 || port > 65535) throw refused();
    const { host, port: targetPort } = target;
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port: targetPort });
      socket.once('connect', () => {
        socket.off('error', onError);
        resolve(socket);
      });
      const onError = () => reject(refused());
      socket.once('error', onError);
    });
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/**
 * Copies both ways between a client stream and a forwarded connection, with TCP's half-close:
 * each side's end reaches the other as an end. Resolves when both directions are done or either
 * side breaks.
 */
export function splice(client: Duplex, socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      client.unpipe(socket);
      socket.unpipe(client);
      socket.destroy();
      if (!client.writableEnded) client.end();
      resolve();
    };
    client.pipe(socket);
    socket.pipe(client);
    socket.on('error', done);
    socket.on('close', done);
    client.on('error', done);
    client.on('close', done);
  });
}
