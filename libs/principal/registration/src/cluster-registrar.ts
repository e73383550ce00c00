import type { CoreV1Api, KubeConfig, V1Secret } from '@kubernetes/client-node';
import { clientNode } from '@pullplane/tls-material';
import type { Logger } from 'pino';
import {
  ARGOCD_AGENT_AGENT_NAME_LABEL,
  adoptedClusterSecret,
  isAdopted,
  isArgocdAgentClusterSecret,
} from './argocd-agent-adoption.js';
import {
  AGENT_LABEL,
  type ClusterCredentials,
  clusterSecret,
  EXPIRES_ANNOTATION,
  FINGERPRINT_ANNOTATION,
  isOurs,
  secretName,
} from './cluster-secret.js';
import { RegistrationError, RegistrationErrorCode } from './errors.js';

export interface ClusterRegistrarOptions {
  kubeConfig: KubeConfig;
  /** Argo CD's namespace, where cluster Secrets live. */
  namespace: string;
  /** The URL Argo CD uses for an agent's cluster. */
  serverFor: (agent: string) => string;
  caPem?: string;
  /** Fresh credentials for an agent (called only when a Secret must be written). */
  credentialsFor: (agent: string) => Promise<ClusterCredentials>;
  /** Digest of what credentials derive from; a change means "rotate" (a function: asked on every check). */
  fingerprint: string | (() => string);
  /**
   * For credentials that expire (`credentialsFor` returns `expiresAt`): a Secret whose
   * credentials have less than this left, or that carries no expiry at all (written before
   * credentials expired), is rewritten by the next `ensure`.
   */
  refreshBeforeMs?: number;
  logger: Logger;
  /** Injectable clock for tests. */
  now?: () => Date;
  /**
   * Take over the cluster Secrets argocd-agent wrote (label
   * `argocd-agent.argoproj-labs.io/agent-name`): keep their name and `server`, replace their
   * credentials with ours. Without it they are left alone like any Secret not ours.
   */
  adoptArgocdAgentSecrets?: boolean;
}

export type EnsureResult = 'created' | 'updated' | 'unchanged' | 'foreign' | 'adopted';
export type RemoveResult = 'deleted' | 'absent' | 'foreign';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const status = (err: unknown) =>
  err instanceof clientNode().ApiException ? (err.code as number) : undefined;

/**
 * Keeps an Argo CD cluster Secret for every agent. Writes are idempotent and conditional
 * (create fails on an existing name, updates carry the resourceVersion), so any number of
 * gateway replicas may run it concurrently without duplicates or lost updates. Secrets it
 * did not create are never touched.
 */
export class ClusterRegistrar {
  private readonly api: CoreV1Api;
  private readonly inflight = new Map<string, Promise<EnsureResult>>();
  /** When each agent's Secret, as last read or written here, stops working (ms). */
  private readonly expiry = new Map<string, number>();

  constructor(private readonly opts: ClusterRegistrarOptions) {
    this.api = opts.kubeConfig.makeApiClient(clientNode().CoreV1Api);
  }

  /** Makes sure the agent's cluster Secret exists and is current. */
  ensure(agent: string): Promise<EnsureResult> {
    if (!DNS_LABEL.test(agent)) {
      return Promise.reject(
        new RegistrationError(RegistrationErrorCode.INVALID_AGENT, `"${agent}" is not an agent name`),
      );
    }
    // Reconnect storms call this repeatedly for one agent: share the work in progress.
    let p = this.inflight.get(agent);
    if (!p) {
      p = this.reconcile(agent).finally(() => this.inflight.delete(agent));
      this.inflight.set(agent, p);
    }
    return p;
  }

  /**
   * `ensure` for a periodic sweep: skips the API round trip for agents whose Secret this
   * registrar last saw or wrote with credentials that are not due for renewal yet.
   */
  refresh(agent: string): Promise<EnsureResult> {
    const expires = this.expiry.get(agent);
    const margin = this.opts.refreshBeforeMs;
    if (margin !== undefined && expires !== undefined && expires - this.now() > margin) {
      return Promise.resolve('unchanged');
    }
    return this.ensure(agent);
  }

  private fingerprint(): string {
    const f = this.opts.fingerprint;
    return typeof f === 'function' ? f() : f;
  }

  private now(): number {
    return (this.opts.now?.() ?? new Date()).getTime();
  }

  private note(agent: string, secret: V1Secret | undefined): void {
    const expires = Date.parse(secret?.metadata?.annotations?.[EXPIRES_ANNOTATION] ?? '');
    if (Number.isFinite(expires)) this.expiry.set(agent, expires);
    else this.expiry.delete(agent);
  }

  private async reconcile(agent: string, attempt = 0): Promise<EnsureResult> {
    const { logger } = this.opts;
    const existing = await this.locate(agent);
    const name = existing?.metadata?.name ?? secretName(agent);
    if (
      existing &&
      !isOurs(existing) &&
      this.opts.adoptArgocdAgentSecrets &&
      isArgocdAgentClusterSecret(existing, agent)
    ) {
      return this.write(agent, existing, attempt, 'adopted');
    }
    if (existing && !isOurs(existing)) {
      logger.warn(
        { agent, secret: name },
        'a cluster secret not created by pullplane exists; leaving it alone',
      );
      return 'foreign';
    }
    if (
      existing &&
      existing.metadata?.annotations?.[FINGERPRINT_ANNOTATION] === this.fingerprint() &&
      !this.expiring(existing)
    ) {
      this.note(agent, existing);
      return 'unchanged';
    }
    return this.write(agent, existing, attempt, existing ? 'updated' : 'created');
  }

  /** Creates, rewrites or adopts the agent's Secret; a conflicting write by another replica is re-read. */
  private async write(
    agent: string,
    existing: V1Secret | undefined,
    attempt: number,
    outcome: 'created' | 'updated' | 'adopted',
  ): Promise<EnsureResult> {
    const { namespace, logger } = this.opts;
    const name = existing?.metadata?.name ?? secretName(agent);
    const spec = {
      agent,
      namespace,
      server: this.opts.serverFor(agent),
      credentials: await this.opts.credentialsFor(agent),
      ...(this.opts.caPem ? { caPem: this.opts.caPem } : {}),
      fingerprint: this.fingerprint(),
    };
    // An adopted Secret keeps argocd-agent's name and `server` on every rewrite.
    const body = (
      existing && (outcome === 'adopted' || isAdopted(existing))
        ? adoptedClusterSecret(existing, spec)
        : clusterSecret(spec)
    ) as V1Secret;
    try {
      if (!existing) {
        await this.api.createNamespacedSecret({ namespace, body });
        this.note(agent, body);
        logger.info({ agent, secret: name }, 'registered agent as an Argo CD cluster');
        return 'created';
      }
      const resourceVersion = existing.metadata?.resourceVersion;
      if (resourceVersion !== undefined) body.metadata!.resourceVersion = resourceVersion;
      await this.api.replaceNamespacedSecret({ name, namespace, body });
      this.note(agent, body);
      logger.info(
        { agent, secret: name, expiresAt: body.metadata?.annotations?.[EXPIRES_ANNOTATION] },
        outcome === 'adopted'
          ? "adopted argocd-agent's cluster secret: its credentials are now a caller token (name and server kept)"
          : 'refreshed cluster secret (credentials rotated or about to expire)',
      );
      return outcome;
    } catch (err) {
      // Another replica wrote first (409): look again rather than overwrite.
      if (status(err) === 409 && attempt < 3) return this.reconcile(agent, attempt + 1);
      throw new RegistrationError(
        RegistrationErrorCode.API_FAILED,
        `writing ${namespace}/${name} failed: ${String(err)}`,
        {
          cause: err,
        },
      );
    }
  }

  /** Whether the Secret's credentials must be renewed now (see `refreshBeforeMs`). */
  private expiring(secret: V1Secret): boolean {
    const margin = this.opts.refreshBeforeMs;
    if (margin === undefined) return false;
    const expires = Date.parse(secret.metadata?.annotations?.[EXPIRES_ANNOTATION] ?? '');
    return !Number.isFinite(expires) || expires - this.now() <= margin;
  }

  /**
   * The agent's Secret: `cluster-<agent>`, or (when adopting) the one labelled for the agent by
   * argocd-agent or by us under another name.
   */
  private async locate(agent: string): Promise<V1Secret | undefined> {
    const byName = await this.read(secretName(agent));
    if (byName || !this.opts.adoptArgocdAgentSecrets) return byName;
    for (const label of [AGENT_LABEL, ARGOCD_AGENT_AGENT_NAME_LABEL]) {
      const list = await this.api
        .listNamespacedSecret({ namespace: this.opts.namespace, labelSelector: `${label}=${agent}` })
        .catch((err: unknown) => {
          throw new RegistrationError(
            RegistrationErrorCode.API_FAILED,
            `listing cluster secrets of ${agent} failed: ${String(err)}`,
            { cause: err },
          );
        });
      const found = list.items.find(
        (s) => s.metadata?.labels?.['argocd.argoproj.io/secret-type'] === 'cluster',
      );
      if (found) return found;
    }
    return undefined;
  }

  /** Deletes the agent's cluster Secret if pullplane created (or adopted) it. */
  async remove(agent: string): Promise<RemoveResult> {
    const existing = await this.locate(agent);
    const name = existing?.metadata?.name ?? secretName(agent);
    if (!existing) return 'absent';
    if (!isOurs(existing)) return 'foreign';
    try {
      await this.api.deleteNamespacedSecret({
        name,
        namespace: this.opts.namespace,
        body: { preconditions: existing.metadata?.uid === undefined ? {} : { uid: existing.metadata.uid } },
      });
    } catch (err) {
      if (status(err) === 404) return 'absent';
      throw new RegistrationError(
        RegistrationErrorCode.API_FAILED,
        `deleting ${name} failed: ${String(err)}`,
        { cause: err },
      );
    }
    this.opts.logger.info({ agent, secret: name }, 'removed cluster secret');
    return 'deleted';
  }

  private async read(name: string): Promise<V1Secret | undefined> {
    try {
      return await this.api.readNamespacedSecret({ name, namespace: this.opts.namespace });
    } catch (err) {
      if (status(err) === 404) return undefined;
      throw new RegistrationError(
        RegistrationErrorCode.API_FAILED,
        `reading ${this.opts.namespace}/${name} failed: ${String(err)}`,
        {
          cause: err,
        },
      );
    }
  }
}
