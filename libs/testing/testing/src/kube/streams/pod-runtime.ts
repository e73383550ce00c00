import { createHash } from 'node:crypto';
import type { ObjectStore } from '../object-store.js';
import type { PodLogs } from '../pod-logs.js';
import { errors, StatusError } from '../status.js';
import { isPlainObject, type KubeObject } from '../types.js';
import { MainProcess } from './main-process.js';
import { newContainerFilesystem, type PodFilesystem } from './pod-filesystem.js';
import { EXIT_SIGKILL, ProcessSignal } from './process-io.js';

/** What the fake kubelet knows of a container from the pod spec. */
export interface ContainerSpec {
  name: string;
  stdin: boolean;
  tty: boolean;
  env: Array<[string, string]>;
  ports: number[];
}

function specs(list: unknown): ContainerSpec[] {
  return (Array.isArray(list) ? list : []).filter(isPlainObject).map((c) => ({
    name: String(c.name ?? ''),
    stdin: c.stdin === true,
    tty: c.tty === true,
    env: (Array.isArray(c.env) ? c.env : [])
      .filter(isPlainObject)
      .filter((e) => typeof e.value === 'string')
      .map((e) => [String(e.name), String(e.value)] as [string, string]),
    ports: (Array.isArray(c.ports) ? c.ports : [])
      .filter(isPlainObject)
      .filter((p) => (p.protocol ?? 'TCP') === 'TCP' && typeof p.containerPort === 'number')
      .map((p) => p.containerPort as number),
  }));
}

function podSpec(pod: KubeObject): Record<string, unknown> {
  return isPlainObject(pod.spec) ? pod.spec : {};
}

/** Every container of a pod: regular, init and ephemeral. */
export function allContainers(pod: KubeObject): ContainerSpec[] {
  const spec = podSpec(pod);
  return [...specs(spec.containers), ...specs(spec.initContainers), ...specs(spec.ephemeralContainers)];
}

/**
 * The container a request names, checked as the API server's streamLocation does: a named one
 * must exist (any kind), an unnamed one is the only regular container; and the pod must be bound
 * to a node.
 */
export function locateContainer(pod: KubeObject, requested: string): ContainerSpec {
  const name = pod.metadata.name ?? '';
  const spec = podSpec(pod);
  const regular = specs(spec.containers);
  let container: ContainerSpec | undefined;
  if (requested === '') {
    if (regular.length === 0) throw errors.badRequest(`a container name must be specified for pod ${name}`);
    if (regular.length > 1) {
      let msg = `a container name must be specified for pod ${name}, choose one of: [${regular.map((c) => c.name).join(' ')}]`;
      const init = specs(spec.initContainers);
      if (init.length > 0) msg += ` or one of the init containers: [${init.map((c) => c.name).join(' ')}]`;
      throw errors.badRequest(msg);
    }
    container = regular[0];
  } else {
    container = allContainers(pod).find((c) => c.name === requested);
    if (!container) throw errors.badRequest(`container ${requested} is not valid for pod ${name}`);
  }
  requireNode(pod);
  return container!;
}

/** The API server refuses to connect to a pod no node runs. */
export function requireNode(pod: KubeObject): void {
  if (typeof podSpec(pod).nodeName !== 'string' || podSpec(pod).nodeName === '') {
    throw new StatusError(400, 'BadRequest', `pod ${pod.metadata.name ?? ''} does not have a host assigned`);
  }
}

/**
 * Whether the kubelet would find the container running: its status says `running`, or the pod is
 * Running and lists no status for it (the short form tests write). Anything else is not running.
 */
export function containerRunning(pod: KubeObject, container: string): boolean {
  const status = isPlainObject(pod.status) ? pod.status : {};
  const lists = [status.containerStatuses, status.initContainerStatuses, status.ephemeralContainerStatuses];
  const entry = lists
    .flatMap((l) => (Array.isArray(l) ? l : []))
    .filter(isPlainObject)
    .find((s) => s.name === container);
  if (entry) return isPlainObject(entry.state) && isPlainObject(entry.state.running);
  return status.phase === 'Running';
}

/** The pod sandbox id the container runtime reports in port-forward errors. */
export function sandboxId(pod: KubeObject): string {
  return createHash('sha256')
    .update(`sandbox/${pod.metadata.uid ?? ''}`)
    .digest('hex');
}

/** One running container: its filesystem, environment and main process. Lives as long as its pod. */
export class ContainerRuntime {
  readonly fs: PodFilesystem;
  private main: MainProcess | undefined;

  constructor(
    private readonly logs: PodLogs,
    private readonly pod: KubeObject,
    readonly spec: ContainerSpec,
    readonly signal: AbortSignal,
  ) {
    this.fs = newContainerFilesystem(pod.metadata.name ?? 'localhost');
  }

  /** The environment an exec'd process starts with (as containerd sets it up). */
  env(tty: boolean): Map<string, string> {
    const env = new Map<string, string>([
      ['PATH', '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      ['HOSTNAME', this.pod.metadata.name ?? ''],
    ]);
    if (tty) env.set('TERM', 'xterm');
    for (const [k, v] of this.spec.env) env.set(k, v);
    env.set('KUBERNETES_SERVICE_HOST', '10.96.0.1');
    env.set('KUBERNETES_SERVICE_PORT', '443');
    env.set('HOME', '/root');
    return env;
  }

  mainProcess(): MainProcess {
    this.main ??= new MainProcess(
      this.logs,
      this.pod.metadata.namespace ?? '',
      this.pod.metadata.name ?? '',
      this.spec.name,
      { tty: this.spec.tty, stdin: this.spec.stdin },
      this.signal,
    );
    return this.main;
  }
}

/** The fake kubelet's containers, created on first use and killed when their pod is deleted. */
export class PodRuntimes {
  private readonly pods = new Map<
    string,
    { kill: AbortController; containers: Map<string, ContainerRuntime> }
  >();
  private readonly unsubscribe: () => void;

  constructor(
    store: ObjectStore,
    private readonly logs: PodLogs,
    /** Told when a pod is deleted (its port servers go too). */
    private readonly onPodDeleted: (uid: string) => void = () => {},
  ) {
    this.unsubscribe = store.subscribe((ev) => {
      if (ev.type === 'DELETED' && ev.object.kind === 'Pod' && ev.object.apiVersion === 'v1') {
        this.kill(ev.object.metadata.uid ?? '');
        this.onPodDeleted(ev.object.metadata.uid ?? '');
      }
    });
  }

  container(pod: KubeObject, spec: ContainerSpec): ContainerRuntime {
    const uid = pod.metadata.uid ?? '';
    let entry = this.pods.get(uid);
    if (!entry) {
      entry = { kill: new AbortController(), containers: new Map() };
      this.pods.set(uid, entry);
    }
    let runtime = entry.containers.get(spec.name);
    if (!runtime) {
      runtime = new ContainerRuntime(this.logs, pod, spec, entry.kill.signal);
      entry.containers.set(spec.name, runtime);
    }
    return runtime;
  }

  /** A signal aborted when the pod is deleted. */
  podSignal(pod: KubeObject): AbortSignal {
    const uid = pod.metadata.uid ?? '';
    let entry = this.pods.get(uid);
    if (!entry) {
      entry = { kill: new AbortController(), containers: new Map() };
      this.pods.set(uid, entry);
    }
    return entry.kill.signal;
  }

  private kill(uid: string): void {
    const entry = this.pods.get(uid);
    if (!entry) return;
    this.pods.delete(uid);
    entry.kill.abort(new ProcessSignal(EXIT_SIGKILL, 'the pod was deleted'));
  }

  close(): void {
    this.unsubscribe();
    for (const uid of [...this.pods.keys()]) this.kill(uid);
  }
}
