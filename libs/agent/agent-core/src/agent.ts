import type { KubeConfig } from '@kubernetes/client-node';
import type { Tracer } from '@opentelemetry/api';
import { type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { createKubeForwarder, type KubeForwarder } from './kube-forwarder.js';
import type { ExecPolicy, SessionRecord } from './kube-sessions.js';
import { TunnelConnector, type TunnelConnectorOptions } from './tunnel-connector.js';

export interface AgentOptions extends Omit<TunnelConnectorOptions, 'onStream' | 'capabilities' | 'logger'> {
  logger: Logger;
  /** The local cluster; requests for it are refused when absent or disabled. */
  kubeConfig?: KubeConfig;
  enableResourceProxy: boolean;
  /** `managed` (default): only Argo CD-managed resources are visible; `none`: no filtering. */
  resourceProxyFilter?: 'managed' | 'none';
  /** Namespace of Argo CD's own configuration (argocd-cm). */
  argocdNamespace?: string;
  /** Forward Impersonate-* headers the resource proxy let through. */
  allowImpersonation?: boolean;
  /** exec, attach and port-forward: off unless `enabled`, with their limits. */
  exec?: Partial<ExecPolicy> | undefined;
  /** Each exec, attach or port-forward session that ended or was refused. */
  onSession?: ((r: SessionRecord) => void) | undefined;
  /** Each Kubernetes API request the resource proxy sent (`refused`: no API here, or disabled). */
  onKubeRequest?: (refused: boolean) => void;
  /** Extra stream handlers by request kind (the redis and extension handlers plug in here). */
  handlers?: Partial<Record<'redis' | 'extension', (stream: LogicalStream) => void>> | undefined;
  /** Set when traces are exported: a span per cluster API call. */
  tracer?: Tracer | undefined;
  /** The name on spans when `agentName` is left to the credentials (a certificate's CN). */
  tracedName?: string | undefined;
}

/** The workload-cluster side: one outbound tunnel, requests served against local services. */
export class Agent {
  readonly connector: TunnelConnector;
  private readonly kube: KubeForwarder | undefined;

  constructor(private readonly opts: AgentOptions) {
    this.kube =
      opts.enableResourceProxy && opts.kubeConfig
        ? createKubeForwarder({
            kubeConfig: opts.kubeConfig,
            logger: opts.logger.child({ component: 'kube' }),
            filter: opts.resourceProxyFilter ?? 'managed',
            argocdNamespace: opts.argocdNamespace ?? 'argocd',
            allowImpersonation: opts.allowImpersonation ?? false,
            ...(opts.exec ? { exec: opts.exec } : {}),
            ...(opts.onSession ? { onSession: opts.onSession } : {}),
            ...(opts.tracer ? { tracer: opts.tracer } : {}),
            ...(opts.tracedName || opts.agentName ? { agentName: opts.tracedName || opts.agentName } : {}),
          })
        : undefined;
    // `registration`: this agent reads the gateway's Registration frame (ClusterAgent status).
    const capabilities = [
      ...(this.kube ? ['kube'] : []),
      ...Object.keys(opts.handlers ?? {}),
      'registration',
    ];
    this.connector = new TunnelConnector({
      ...opts,
      capabilities,
      logger: opts.logger,
      onStream: (s) => this.serve(s),
    });
  }

  /** exec, attach and port-forward sessions open now. */
  get activeSessions(): number {
    return this.kube?.activeSessions ?? 0;
  }

  get ready(): boolean {
    return this.connector.connected;
  }

  start(): void {
    // Reading argocd-cm must not hold up the tunnel; until it is read the default applies.
    void this.kube?.start();
    this.connector.start();
  }

  stop(): Promise<void> {
    this.kube?.stop();
    return this.connector.stop();
  }

  private serve(stream: LogicalStream): void {
    const kind = stream.open.head.case;
    if (kind === 'http') {
      this.opts.onKubeRequest?.(!this.kube);
      if (!this.kube) {
        stream.reset(
          TunnelErrorCode.REFUSED,
          this.opts.enableResourceProxy
            ? `agent ${this.opts.agentName} has no Kubernetes API configured`
            : `resource proxy is disabled on agent ${this.opts.agentName}`,
        );
        return;
      }
      this.kube.handle(stream);
      return;
    }
    const handler = kind ? this.opts.handlers?.[kind] : undefined;
    if (!handler) {
      stream.reset(
        TunnelErrorCode.REFUSED,
        `agent ${this.opts.agentName} does not serve ${kind ?? 'empty'} requests`,
      );
      return;
    }
    handler(stream);
  }
}
