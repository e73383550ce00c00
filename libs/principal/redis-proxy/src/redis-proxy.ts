import net, { type AddressInfo, type Server, type Socket } from 'node:net';
import tls from 'node:tls';
import type { Tracer } from '@opentelemetry/api';
import { isLoopback } from '@pullplane/names';
import type { RedisEndpoint } from '@pullplane/redis-common';
import { RedisSubscriber, SubscriptionHub } from '@pullplane/redis-common';
import {
  counterSeries,
  getOrCreateCounter,
  getOrCreateGauge,
  getOrCreateHistogram,
} from '@pullplane/telemetry';
import { type ListenerTls, listenerSecureContext } from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AgentOpener } from './agent-call.js';
import { AgentSubscriptions } from './agent-subscriptions.js';
import { argocdAgentRedisProxyMetrics } from './argocd-agent-metrics.js';
import { BufferBudget } from './buffer-budget.js';
import { ClientConnection } from './client-connection.js';
import { CommandBook } from './commands/table.js';
import { RedisProxyError, RedisProxyErrorCode } from './errors.js';
import { DEFAULT_AGENT_KEY_PREFIXES, KeyRouter } from './key-routing.js';
import { SharedPrincipalLinks } from './principal-pool.js';
import {
  type ConnectionMetrics,
  DEFAULT_LIMITS,
  type LimitName,
  type ProxyContext,
  type ProxyLimits,
} from './proxy-context.js';

export interface RedisProxyTls extends ListenerTls {
  /**
   * Decides whether a verified client certificate may use the proxy (e.g. only callers, never
   * an agent's certificate of the same CA): a reason to refuse, or undefined.
   */
  authorizeClient?: (peer: tls.PeerCertificate) => string | undefined;
}

export interface RedisProxyOptions {
  /** Opens streams to agents (AgentRouter). */
  router: AgentOpener;
  logger: Logger;
  registry: Registry;
  host: string;
  port: number;
  /** TLS for clients; with `ca`, clients must present a certificate that chains to it. */
  tls?: RedisProxyTls;
  /** The principal Redis; its `password` is what the proxy uses there. */
  principal: RedisEndpoint;
  /** Required from clients when set (`AUTH <password>` or `HELLO 3 AUTH default <password>`). */
  password?: string;
  /** Key prefixes after which `<agent>_` names an agent (default: Argo CD's live-state caches). */
  agentKeyPrefixes?: readonly string[];
  /** How long an agent may take to answer one command (default 5 s). */
  requestTimeoutMs?: number;
  /** How long SUBSCRIBE waits for an agent's confirmation (default 3 s). */
  subscribeTimeoutMs?: number;
  limits?: Partial<ProxyLimits>;
  /** Connections beyond this are refused with Redis' "max number of clients reached". */
  maxClients?: number;
  /** Set when traces are exported: a span per command sent to an agent. */
  tracer?: Tracer | undefined;
  /** Commands (`name` or `name|subcommand`) relayed beyond the default allow-list. */
  allowCommands?: readonly string[];
}

export interface RedisProxy {
  readonly port: number;
  readonly connections: number;
  /** Upstream subscriptions this replica holds: principal channels/patterns, agent streams. */
  readonly subscriptions: { principal: number; agents: number };
  listen(): Promise<void>;
  /** New certificate, key or CA for connections from now on (rotation without a restart). */
  reloadTls(material: Pick<RedisProxyTls, 'cert' | 'key' | 'ca'>): void;
  /** Stops accepting; each connection closes once its owed replies are sent, the rest after `graceMs`. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The redis proxy: a Redis-protocol server in front of the principal Redis that serves agent
 * keys (Argo CD's per-application live state) from each agent's own Redis, through its tunnel.
 */
export function createRedisProxy(opts: RedisProxyOptions): RedisProxy {
  const log = opts.logger;
  const keys = new KeyRouter(opts.agentKeyPrefixes ?? DEFAULT_AGENT_KEY_PREFIXES);
  const limits: ProxyLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const maxClients = opts.maxClients ?? 10_000;

  const commandsByRoute = getOrCreateCounter(opts.registry, {
    name: 'redis_proxy_commands_total',
    help: 'Commands handled by the redis proxy, by where they were answered.',
    labelNames: ['route'],
  });
  const agentSeconds = getOrCreateHistogram(opts.registry, {
    name: 'redis_proxy_agent_command_duration_seconds',
    help: 'Time for an agent to answer one command through its tunnel.',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
  });
  const protocolErrors = getOrCreateCounter(opts.registry, {
    name: 'redis_proxy_protocol_errors_total',
    help: 'Client connections closed for malformed RESP.',
  });
  const refusedCommands = getOrCreateCounter(opts.registry, {
    name: 'redis_proxy_refused_commands_total',
    help: "Commands refused by name: not on the allow-list (not_allowed) or sent before AUTH (unauthenticated); names Redis does not have are counted as 'unknown'.",
    labelNames: ['command', 'reason'],
  });
  const limitRefusals = getOrCreateCounter(opts.registry, {
    name: 'redis_proxy_connections_refused_total',
    help: 'Client connections refused or closed because they went over a limit, by limit.',
    labelNames: ['limit'],
  });
  const budget = new BufferBudget(limits.maxBufferedBytes);
  getOrCreateGauge(opts.registry, {
    name: 'redis_proxy_buffered_bytes',
    help: 'Bytes held for clients: commands being received and queued (request), replies not yet written (reply).',
    labelNames: ['side'],
    collect() {
      this.set({ side: 'request' }, budget.request);
      this.set({ side: 'reply' }, budget.reply);
    },
  });
  const connectionsGauge = getOrCreateGauge(opts.registry, {
    name: 'redis_proxy_connections',
    help: 'Open client connections.',
  });
  // Every route's series is there from the start (at 0), then counted as a plain number on the
  // hot path and handed to Prometheus when it scrapes.
  const counter = (route: 'local' | 'principal' | 'agent' | 'split' | 'refused') => {
    commandsByRoute.inc({ route }, 0);
    return counterSeries(commandsByRoute, { route });
  };
  // Only agents presence knows get a series of their own: keys can name any agent.
  const compat = argocdAgentRedisProxyMetrics(
    opts.registry,
    (agent) => opts.router.lookup(agent) !== undefined,
  );
  const metrics: ConnectionMetrics = {
    agentCommand: (agent, command, failed) => compat.command(agent, command, failed),
    routed: {
      local: counter('local'),
      principal: counter('principal'),
      agent: counter('agent'),
      split: counter('split'),
      refused: counter('refused'),
    },
    agentSeconds: agentSeconds.series({}),
    protocolErrors,
    commandRefused: (command, reason) => refusedCommands.inc({ command, reason }),
    limitHit: (limit: LimitName) => limitRefusals.inc({ limit }),
  };
  const commands = new CommandBook(opts.allowCommands);

  // One subscriber connection to the principal and one stream per agent channel, shared by
  // every client of this replica.
  let principalHub: SubscriptionHub;
  const subscriber = new RedisSubscriber({
    endpoint: opts.principal,
    logger: log.child({ component: 'principal-pubsub' }),
    onMessage: (m) => principalHub.dispatch(m),
  });
  principalHub = new SubscriptionHub({
    start: (kind, name) => subscriber.subscribe(kind, name),
    stop: (kind, name) => subscriber.unsubscribe(kind, name),
  });
  let agentHub: SubscriptionHub;
  const agentSubs = new AgentSubscriptions({
    opener: opts.router,
    keys,
    logger: log.child({ component: 'agent-pubsub' }),
    onMessage: (m) => agentHub.dispatch(m),
    maxMessageBytes: limits.maxBulkLength,
    onStream: (agent, command, failed) => compat.command(agent, command, failed),
    onStreamLost: (agent, command) => compat.failed(agent, command),
  });
  agentHub = new SubscriptionHub(agentSubs);

  let nextId = 0;
  const ctx: ProxyContext = {
    keys,
    opener: opts.router,
    hubs: { principal: principalHub, agents: agentHub, keys, opener: opts.router },
    principal: opts.principal,
    password: opts.password === '' ? undefined : opts.password,
    limits,
    budget,
    commands,
    requestTimeoutMs: opts.requestTimeoutMs ?? 5_000,
    subscribeTimeoutMs: opts.subscribeTimeoutMs ?? 3_000,
    logger: log,
    metrics,
    ...(opts.tracer ? { tracer: opts.tracer } : {}),
    nextClientId: () => ++nextId,
  };

  const shared = new SharedPrincipalLinks({
    endpoint: opts.principal,
    logger: log,
    maxBulkLength: limits.maxBulkLength * 2,
  });
  const clients = new Set<ClientConnection>();
  const authorize = opts.tls?.authorizeClient;
  const accept = (socket: Socket) => {
    if (authorize && opts.tls?.ca) {
      const reason = authorize((socket as tls.TLSSocket).getPeerCertificate());
      if (reason !== undefined) {
        log.warn(
          { remote: `${socket.remoteAddress}:${socket.remotePort}`, reason },
          'redis proxy refused a client certificate',
        );
        socket.destroy();
        return;
      }
    }
    if (clients.size >= maxClients) {
      metrics.limitHit('max_clients');
      // Read (and drop) what it sends, or its FIN is never seen and the socket, never closed,
      // holds up close() for good.
      socket.on('error', () => undefined);
      socket.resume();
      socket.end('-ERR max number of clients reached\r\n');
      return;
    }
    const c = new ClientConnection(socket, ctx, shared, (closed) => {
      clients.delete(closed);
      connectionsGauge.dec();
    });
    clients.add(c);
    connectionsGauge.inc();
  };

  let server: Server;
  if (opts.tls) {
    server = tls.createServer(
      {
        ...listenerSecureContext(opts.tls),
        ...(opts.tls.ca ? { requestCert: true, rejectUnauthorized: true } : {}),
      },
      accept,
    );
    server.on('tlsClientError', (err) => log.info({ err: err.message }, 'redis proxy TLS handshake failed'));
  } else {
    server = net.createServer(accept);
  }
  let port = 0;

  return {
    get port() {
      if (!port) throw new RedisProxyError(RedisProxyErrorCode.NOT_LISTENING, 'redis proxy is not listening');
      return port;
    },
    get connections() {
      return clients.size;
    },
    get subscriptions() {
      return { principal: principalHub.size, agents: agentSubs.size };
    },
    reloadTls(material) {
      if (!opts.tls)
        throw new RedisProxyError(RedisProxyErrorCode.NOT_LISTENING, 'the redis proxy serves plaintext');
      (server as tls.Server).setSecureContext(listenerSecureContext({ ...opts.tls, ...material }));
      log.info('redis proxy TLS material reloaded');
    },
    listen() {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port, opts.host, () => {
          server.off('error', reject);
          port = (server.address() as AddressInfo).port;
          log.info(
            { host: opts.host, port, tls: opts.tls !== undefined, allowed: commands.allowed },
            'redis proxy listening',
          );
          if (!isLoopback(opts.host) && ctx.password === undefined && opts.tls === undefined) {
            log.warn(
              { host: opts.host, port },
              'redis proxy listens beyond loopback without a password and without TLS: anyone who reaches this port can use the principal Redis; set --redis-password (and --tls-cert-path/--tls-key-path), or --listen-host=127.0.0.1 behind a mesh sidecar',
            );
          }
          resolve();
        });
      });
    },
    async close(graceMs = 0) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if (graceMs > 0 && clients.size > 0) {
        const deadline = Date.now() + graceMs;
        for (const c of clients) c.drain();
        while (clients.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      }
      for (const c of clients) c.destroy();
      agentSubs.closeAll();
      subscriber.close();
      shared.close();
      await closed;
    },
  };
}
