import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CLUSTER_AGENT_GROUP, CLUSTER_AGENT_PLURAL, CLUSTER_AGENT_VERSION } from './cluster-agent-spec.js';

export type ConditionType = 'Connected' | 'Registered' | 'CredentialExpiresSoon';

export interface Condition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/**
 * The status conditions of one ClusterAgent, written through its status subresource whenever
 * one changes. Writes are serialised and the latest state wins; a condition's
 * lastTransitionTime moves only when its status does.
 */
export class ClusterAgentStatus {
  private readonly conditions = new Map<ConditionType, Condition>();
  private generation: number | undefined;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  private closed = false;

  constructor(
    private readonly api: CustomObjectsApi,
    private readonly namespace: string,
    private readonly name: string,
    private readonly logger: Logger,
  ) {}

  /** The generation of the spec the conditions describe. */
  observe(generation: number | undefined): void {
    if (generation === this.generation) return;
    this.generation = generation;
    this.schedule();
  }

  set(type: ConditionType, status: Condition['status'], reason: string, message: string): void {
    const prev = this.conditions.get(type);
    if (prev && prev.status === status && prev.reason === reason && prev.message === message) return;
    this.conditions.set(type, {
      type,
      status,
      reason,
      message,
      lastTransitionTime:
        prev && prev.status === status
          ? prev.lastTransitionTime
          : new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    });
    this.schedule();
  }

  get(type: ConditionType): Condition | undefined {
    return this.conditions.get(type);
  }

  /** No more writes (the ClusterAgent was deleted, or the agent stops). */
  close(): Promise<void> {
    this.closed = true;
    return this.writing;
  }

  /** Resolves when every change made so far is written (or failed). */
  flushed(): Promise<void> {
    return this.writing;
  }

  private schedule(): void {
    if (this.closed) return;
    this.dirty = true;
    this.writing = this.writing.then(() => this.write());
  }

  private async write(): Promise<void> {
    if (!this.dirty || this.closed) return;
    this.dirty = false;
    const order: ConditionType[] = ['Connected', 'Registered', 'CredentialExpiresSoon'];
    const conditions = order
      .map((t) => this.conditions.get(t))
      .filter((c): c is Condition => c !== undefined)
      .map((c) => (this.generation !== undefined ? { ...c, observedGeneration: this.generation } : c));
    const status = {
      conditions,
      ...(this.generation !== undefined ? { observedGeneration: this.generation } : {}),
    };
    try {
      await this.api.patchNamespacedCustomObjectStatus({
        group: CLUSTER_AGENT_GROUP,
        version: CLUSTER_AGENT_VERSION,
        namespace: this.namespace,
        plural: CLUSTER_AGENT_PLURAL,
        name: this.name,
        // JSON patch: `add` sets /status whether or not it exists yet.
        body: [{ op: 'add', path: '/status', value: status }],
      });
    } catch (err) {
      this.logger.warn(
        { clusterAgent: `${this.namespace}/${this.name}`, err: String(err) },
        'could not write the ClusterAgent status',
      );
    }
  }
}
