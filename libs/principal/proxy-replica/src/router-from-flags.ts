import type { Bus } from '@pullplane/bus';
import { type TunnelCredentials, tunnelCredentials } from '@pullplane/grpc-frames';
import { AgentRouter, type LocalGateway } from '@pullplane/router';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/** The gateway-client flags both proxies carry (each under its own env and params names). */
export interface GatewayClientFlags {
  gatewayPlaintext: boolean;
  gatewayCertPath?: string | undefined;
  gatewayKeyPath?: string | undefined;
  gatewayCaPath?: string | undefined;
  gatewayServerName?: string | undefined;
}

/** How a replica keeps its links to gateways and its routes (the rest of the gateway-client flags). */
export interface GatewayLinkFlags {
  /** Persistent links to each gateway. */
  gatewayLinks: number;
  /** How often routes are compared with the presence store, in ms. */
  gatewayRouteReconcileInterval: number;
  /** Response bytes all links may hold for readers together. */
  gatewayLinkBufferBudget: number;
  /** Age after which a link takes no new streams, in ms. */
  gatewayLinkMaxAge: number;
}

/** What is missing for reaching gateways (each proxy's config validation reports it). */
export function gatewayClientProblems(f: GatewayClientFlags): string[] {
  if (f.gatewayPlaintext || (f.gatewayCertPath && f.gatewayKeyPath)) return [];
  return [
    'reaching gateways needs --gateway-cert-path and --gateway-key-path (or --gateway-plaintext behind a mesh)',
  ];
}

/** How often the proxy certificate, key and CA files are read again (cert-manager rotates them in place). */
export const GATEWAY_CERT_REFRESH_MS = 60_000;

/**
 * mTLS towards gateways' internal listeners, or plaintext when a mesh sidecar adds it. The
 * certificate, key and CA (without a CA file: the system roots) are read here first, so a missing
 * or broken file fails at startup rather than on the first request, and again at most every
 * `refreshMs` when a connection is dialled, so a rotated one applies to the next connection.
 */
export function gatewayCredentials(
  f: GatewayClientFlags,
  refreshMs = GATEWAY_CERT_REFRESH_MS,
): TunnelCredentials {
  if (f.gatewayPlaintext) return tunnelCredentials.insecure();
  if (!f.gatewayCertPath || !f.gatewayKeyPath) throw new Error(gatewayClientProblems(f).join('; '));
  return tunnelCredentials.files({
    certFile: f.gatewayCertPath,
    keyFile: f.gatewayKeyPath,
    caFile: f.gatewayCaPath,
    refreshMs,
  });
}

/** A started router for a proxy replica, configured from its gateway-client flags. */
export async function startRouterFromFlags(
  f: GatewayClientFlags & GatewayLinkFlags & { requestTimeout: number },
  deps: { bus: Bus; logger: Logger; registry?: Registry; local?: LocalGateway },
): Promise<AgentRouter> {
  const router = new AgentRouter({
    bus: deps.bus,
    logger: deps.logger.child({ component: 'router' }),
    credentials: gatewayCredentials(f),
    routeTimeoutMs: f.requestTimeout,
    linksPerGateway: f.gatewayLinks,
    reconcileIntervalMs: f.gatewayRouteReconcileInterval,
    linkBufferBudgetBytes: f.gatewayLinkBufferBudget,
    linkMaxAgeMs: f.gatewayLinkMaxAge,
    ...(deps.registry ? { registry: deps.registry } : {}),
    ...(deps.local ? { local: deps.local } : {}),
    ...(f.gatewayServerName ? { serverNameOverride: f.gatewayServerName } : {}),
  });
  await router.start();
  return router;
}
