import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { type Service, serviceOps } from '@pullplane/service';
import { apiStatus, clientNode, loadKubeAccess, type SecretData, SecretWatch } from '@pullplane/tls-material';
import type { AgentServiceConfig } from '../agent-options.js';
import { type AgentService, type AgentServiceDeps, createAgentService } from '../agent-service.js';
import {
  applyClusterAgent,
  CLUSTER_AGENT_GROUP,
  CLUSTER_AGENT_PLURAL,
  CLUSTER_AGENT_VERSION,
  type ClusterAgentObject,
  type TokenSource,
} from './cluster-agent-spec.js';
import { ClusterAgentStatus } from './cluster-agent-status.js';
import { credentialExpiryCondition } from './credential-expiry.js';
import { tokenExpiry } from './token-expiry.js';

export { CREDENTIAL_EXPIRY_WARNING_MS } from './credential-expiry.js';

export interface ClusterAgentService extends Service {
  /** The agent run from the ClusterAgent's current spec; undefined while there is none. */
  readonly current: AgentService | undefined;
  /** The conditions being written; undefined while the ClusterAgent does not exist. */
  readonly status: ClusterAgentStatus | undefined;
}

/**
 * Runs the agent from a ClusterAgent (--cluster-agent) in --namespace of the local cluster:
 * follows it (list, then watch; re-listed whenever the watch ends), runs an agent from its
 * spec over the flags (a changed spec restarts the agent, a deleted ClusterAgent closes the
 * tunnel until one is created again; the Secret spec.token.secretRef names is watched, so a
 * rotated token is presented from the next connection on, without a restart), and writes its
 * status conditions: Connected,
 * Registered (told by the gateway once the Argo CD cluster Secret is written) and
 * CredentialExpiresSoon (the token's or the client certificate's expiry).
 */
export function createClusterAgentService(
  c: AgentServiceConfig,
  deps: AgentServiceDeps,
): ClusterAgentService {
  const name = c.clusterAgent!;
  const namespace = c.namespace;
  const where = `ClusterAgent ${namespace}/${name}`;
  const logger = deps.logger.child({ clusterAgent: `${namespace}/${name}` });
  const ops = serviceOps('agent', c, deps);
  let kube: KubeConfig;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  let inner: AgentService | undefined;
  /** The Secret spec.token.secretRef names, followed while `inner` runs from it. */
  let tokenSecret: SecretWatch | undefined;
  let status: ClusterAgentStatus | undefined;
  let specKey: string | undefined;
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;
  let abort: AbortController | undefined;
  let wake: (() => void) | undefined;
  let following: Promise<void> | undefined;

  ops.addReadinessCheck('cluster-agent', () =>
    inner
      ? inner.agent.ready
        ? true
        : 'not connected to the gateway'
      : `${where} does not exist or cannot run`,
  );

  const tokenIn = (data: SecretData, ref: { name: string; key: string }): string => {
    if (!data) throw new Error(`Secret ${namespace}/${ref.name} (spec.token.secretRef) does not exist`);
    const value = data[ref.key]?.toString('utf8').trim();
    if (!value)
      throw new Error(`Secret ${namespace}/${ref.name} (spec.token.secretRef) has no key ${ref.key}`);
    return value;
  };

  /** The token for the next connection: from the watched Secret, else read now. */
  const readToken = async (source: NonNullable<TokenSource>): Promise<string> => {
    if ('inline' in source) return source.inline;
    if (tokenSecret) return tokenIn(tokenSecret.current, source.secret);
    const { name: secret, key } = source.secret;
    let data: Record<string, string> | undefined;
    try {
      data = (await core.readNamespacedSecret({ name: secret, namespace })).data;
    } catch (err) {
      const code = apiStatus(err);
      throw new Error(
        code === 404
          ? `Secret ${namespace}/${secret} (spec.token.secretRef) does not exist`
          : code === 403
            ? `Secret ${namespace}/${secret} (spec.token.secretRef): forbidden (the agent needs get, list and watch on it)`
            : `Secret ${namespace}/${secret} (spec.token.secretRef): ${String(err)}`,
      );
    }
    const value = data?.[key] ? Buffer.from(data[key], 'base64').toString('utf8').trim() : '';
    if (!value) throw new Error(`Secret ${namespace}/${secret} (spec.token.secretRef) has no key ${key}`);
    return value;
  };

  const stopInner = async () => {
    tokenSecret?.stop();
    tokenSecret = undefined;
    await inner?.stop();
    inner = undefined;
  };

  /**
   * Follows the token's Secret for the agent about to run: the next connection presents what
   * it holds then, and a rotated token's expiry is judged when it changes. Without list and
   * watch on it the Secret is read at every connection instead.
   */
  const followTokenSecret = async (ref: { name: string; key: string }) => {
    const watch = new SecretWatch({ kubeConfig: kube, namespace, name: ref.name, logger });
    try {
      await watch.start();
      tokenSecret = watch;
    } catch (err) {
      watch.stop();
      logger.warn(
        { err: String(err) },
        `cannot watch Secret ${namespace}/${ref.name} (spec.token.secretRef); reading it at every connection instead`,
      );
    }
  };

  /** Runs what `obj` says (undefined: deleted). Called one at a time. */
  const apply = async (obj: ClusterAgentObject | undefined): Promise<void> => {
    if (stopped) return;
    if (!obj) {
      if (inner) {
        await stopInner();
        logger.info(`${where} deleted; tunnel closed until it is created again`);
      }
      await status?.close();
      status = undefined;
      specKey = undefined;
      return;
    }
    status ??= new ClusterAgentStatus(custom, namespace, name, logger);
    const st = status;
    st.observe(obj.metadata.generation);
    const key = JSON.stringify(obj.spec ?? null);
    if (key === specKey) return;
    specKey = key;
    if (inner) {
      await stopInner();
      logger.info(`${where} changed; restarting the agent with its new spec`);
    }
    const applied = applyClusterAgent(c, obj);
    if ('problems' in applied) {
      logger.error({ problems: applied.problems }, `${where} cannot be run`);
      st.set('Connected', 'False', 'InvalidSpec', applied.problems.join('; '));
      return;
    }
    const cfg = applied.config;
    const source = applied.token;
    let tokenProblem: string | undefined;
    const judgeToken = (value: string) => {
      tokenProblem = undefined;
      const c = credentialExpiryCondition('token', tokenExpiry(value), Date.now());
      st.set('CredentialExpiresSoon', c.status, c.reason, c.message);
    };
    if (source && 'secret' in source) await followTokenSecret(source.secret);
    const token = source
      ? async () => {
          try {
            const value = await readToken(source);
            judgeToken(value);
            return value;
          } catch (err) {
            tokenProblem = err instanceof Error ? err.message : String(err);
            st.set('Connected', 'False', 'TokenUnavailable', tokenProblem);
            throw err;
          }
        }
      : undefined;
    if (!source && cfg.creds.startsWith('header:'))
      st.set(
        'CredentialExpiresSoon',
        'False',
        'MeshIdentity',
        "the mesh's sidecar holds the agent's credential",
      );
    const svc = createAgentService(cfg, {
      ...deps,
      ops: ops.server,
      kubeConfig: kube,
      ...(token ? { token } : {}),
    });
    const connector = svc.agent.connector;
    const target = `${cfg.serverAddress}:${cfg.serverPort}`;
    // A rotated token: judged now, presented from the next connection on; the live tunnel keeps
    // the one it was opened with.
    if (source && 'secret' in source)
      tokenSecret?.on('change', (data) => {
        try {
          judgeToken(tokenIn(data, source.secret));
        } catch (err) {
          tokenProblem = err instanceof Error ? err.message : String(err);
          if (!connector.connected) st.set('Connected', 'False', 'TokenUnavailable', tokenProblem);
        }
      });
    st.set('Connected', 'Unknown', 'Connecting', `dialling the gateway at ${target}`);
    st.set('Registered', 'Unknown', 'WaitingForGateway', 'the gateway has not said yet');
    connector.on('connected', (w) => {
      st.set(
        'Connected',
        'True',
        'TunnelEstablished',
        `tunnel to gateway ${w.gatewayId} at ${target} (session ${w.sessionId})`,
      );
      // A client certificate is read again for every connection (rotation): judged on each.
      const certificateExpiry = svc.clientCertificateExpiry();
      if (!source && certificateExpiry) {
        const c = credentialExpiryCondition('certificate', certificateExpiry, Date.now());
        st.set('CredentialExpiresSoon', c.status, c.reason, c.message);
      }
    });
    connector.on('rejected', (details) =>
      st.set(
        'Connected',
        'False',
        'CredentialsRejected',
        `the gateway refused this agent's credentials: ${details}`,
      ),
    );
    connector.on('disconnected', (reason) => {
      if (tokenProblem) st.set('Connected', 'False', 'TokenUnavailable', tokenProblem);
      else if (
        st.get('Connected')?.reason !== 'CredentialsRejected' ||
        st.get('Connected')?.status === 'True'
      )
        st.set('Connected', 'False', 'Disconnected', `no tunnel to ${target}: ${reason}`);
    });
    connector.on('registration', (r) =>
      r.registered
        ? st.set(
            'Registered',
            'True',
            'ClusterSecretWritten',
            `registered with Argo CD: cluster Secret ${r.clusterSecret || '(adopted)'}, server ${r.server}`,
          )
        : st.set(
            'Registered',
            'False',
            'RegistrationFailed',
            r.message || 'the gateway could not register the cluster',
          ),
    );
    inner = svc;
    try {
      await svc.start();
    } catch (err) {
      inner = undefined;
      tokenSecret?.stop();
      tokenSecret = undefined;
      await svc.stop().catch(() => undefined);
      logger.error({ err: String(err) }, `the agent of ${where} cannot start`);
      st.set('Connected', 'False', 'StartFailed', String(err instanceof Error ? err.message : err));
    }
  };
  const reconcile = (obj: ClusterAgentObject | undefined) => {
    chain = chain
      .then(() => apply(obj))
      .catch((err: unknown) => logger.error({ err: String(err) }, 'reconcile failed'));
  };

  const path = `/apis/${CLUSTER_AGENT_GROUP}/${CLUSTER_AGENT_VERSION}/namespaces/${encodeURIComponent(namespace)}/${CLUSTER_AGENT_PLURAL}`;
  const fieldSelector = `metadata.name=${name}`;
  const list = async (): Promise<string> => {
    const res = (await custom.listNamespacedCustomObject({
      group: CLUSTER_AGENT_GROUP,
      version: CLUSTER_AGENT_VERSION,
      namespace,
      plural: CLUSTER_AGENT_PLURAL,
      fieldSelector,
    })) as { metadata?: { resourceVersion?: string }; items?: ClusterAgentObject[] };
    reconcile(res.items?.[0]);
    return res.metadata?.resourceVersion ?? '';
  };
  const watchOnce = (resourceVersion: string) =>
    new Promise<void>((resolve) => {
      const w = new (clientNode().Watch)(kube);
      w.watch(
        path,
        { fieldSelector, resourceVersion, allowWatchBookmarks: true },
        (phase: string, obj: ClusterAgentObject) => {
          if (phase === 'ADDED' || phase === 'MODIFIED') reconcile(obj);
          else if (phase === 'DELETED') reconcile(undefined);
        },
        () => resolve(),
      ).then(
        (a) => {
          abort = a;
          if (stopped) a.abort();
        },
        () => resolve(),
      );
    });
  /** List, watch from there, and again whenever the watch ends (a pause after failures). */
  const follow = async (first: string) => {
    let rv = first;
    let failures = 0;
    while (!stopped) {
      await watchOnce(rv);
      if (stopped) break;
      try {
        rv = await list();
        failures = 0;
      } catch (err) {
        failures++;
        logger.warn({ err: String(err) }, `cannot read ${where}; retrying`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, Math.min(30_000, 500 * 2 ** failures));
          t.unref();
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
      }
    }
  };

  return {
    get current() {
      return inner;
    },
    get status() {
      return status;
    },
    async start() {
      await ops.open();
      kube = deps.kubeConfig ?? loadKubeAccess({ kubeconfig: c.kubeconfig, kubecontext: c.kubecontext });
      custom = kube.makeApiClient(clientNode().CustomObjectsApi);
      core = kube.makeApiClient(clientNode().CoreV1Api);
      let rv: string;
      try {
        rv = await list();
      } catch (err) {
        const code = apiStatus(err);
        throw new Error(
          code === 404
            ? `--cluster-agent: the ClusterAgent resource is not served by this cluster's API (install deploy/crds/clusteragents.pullplane.io.yaml)`
            : code === 403
              ? `--cluster-agent: reading ${where} is forbidden (the agent needs get, list and watch on clusteragents.pullplane.io and patch on clusteragents/status)`
              : `--cluster-agent: cannot read ${where}: ${String(err)}`,
        );
      }
      following = follow(rv);
      await chain;
      logger.info({ running: inner !== undefined }, `following ${where}`);
    },
    async stop() {
      stopped = true;
      ops.markShuttingDown();
      abort?.abort();
      wake?.();
      await chain;
      await stopInner();
      await status?.close();
      await following;
      await ops.close();
    },
    async reload() {
      await inner?.reload();
    },
  };
}
