import type { KubeConfig } from '@kubernetes/client-node';
import { type LogicalStream, TunnelErrorCode } from '@pullplane/tunnel';
import type { Logger } from 'pino';
import { createKubeForwarder } from './kube-forwarder.js';
import { TunnelConnector, type TunnelConnectorOptions } from './tunnel-connector.js';

export interface AgentOptions extends Omit<TunnelConnectorOptions, 'onStream' | 'capabilities' | 'logger'> {
  logger: Logger;
  /** The local cluster; requests for it are refused when absent or disabled. */
  kubeConfig?: KubeConfig;
  enableResourceProxy: boolean;
  /** Extra stream handlers by request kind (the redis handler plugs in here). */
  handlers?: Partial<Record<'redis', (stream: LogicalStream) => void>>;
}

/** The workload-cluster side: one outbound tunnel, requests served against local services. */
export class Agent {
  readonly connector: TunnelConnector;
  private readonly kube: ((s: LogicalStream) => void) | undefined;

  constructor(private readonly opts: AgentOptions) {
    this.kube =
      opts.enableResourceProxy && opts.kubeConfig
        ? createKubeForwarder({
            kubeConfig: opts.kubeConfig,
            logger: opts.logger.child({ component: 'kube' }),
          })
        : undefined;
    const capabilities = [...(this.kube ? ['kube'] : []), ...Object.keys(opts.handlers ?? {})];
    this.connector = new TunnelConnector({
      ...opts,
      capabilities,
      logger: opts.logger,
      onStream: (s) => this.serve(s),
    });
  }

  get ready(): boolean {
    return this.connector.connected;
  }

  start(): void {
    this.connector.start();
  }

  stop(): Promise<void> {
    return this.connector.stop();
  }

  private serve(stream: LogicalStream): void {
    const kind = stream.open.head.case;
    if (kind === 'http') {
      if (!this.kube) {
        stream.reset(
          TunnelErrorCode.REFUSED,
          this.opts.enableResourceProxy
            ? `agent ${this.opts.agentName} has no Kubernetes API configured`
            : `resource proxy is disabled on agent ${this.opts.agentName}`,
        );
        return;
      }
      this.kube(stream);
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
