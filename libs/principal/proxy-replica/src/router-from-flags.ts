import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { type ChannelCredentials, credentials, experimental } from '@grpc/grpc-js';
import type { Bus } from '@pullplane/bus';
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
 * mTLS towards gateways' internal listeners, or plaintext when a mesh sidecar adds it. With a CA
 * file the certificate, key and CA are re-read every `refreshMs` and every new connection takes
 * the latest (grpc-js's file-watching certificate provider); the files are read once here
 * first, so a missing or broken one fails at startup rather than on the first request.
 */
export function gatewayCredentials(
  f: GatewayClientFlags,
  refreshMs = GATEWAY_CERT_REFRESH_MS,
): ChannelCredentials {
  if (f.gatewayPlaintext) return credentials.createInsecure();
  if (!f.gatewayCertPath || !f.gatewayKeyPath) throw new Error(gatewayClientProblems(f).join('; '));
  const ca = f.gatewayCaPath ? readFileSync(f.gatewayCaPath) : undefined;
  const key = readFileSync(f.gatewayKeyPath);
  const cert = readFileSync(f.gatewayCertPath);
  createSecureContext({ cert, key, ...(ca ? { ca } : {}) });
  // Without a CA file the system roots verify gateways, and only a CA provider can rotate.
  if (!f.gatewayCaPath) return credentials.createSsl(null, key, cert);
  const files = new experimental.FileWatcherCertificateProvider({
    certificateFile: f.gatewayCertPath,
    privateKeyFile: f.gatewayKeyPath,
    caCertificateFile: f.gatewayCaPath,
    refreshIntervalMs: refreshMs,
  });
  return experimental.createCertificateProviderChannelCredentials(files, files);
}

/** A started router for a proxy replica, configured from its gateway-client flags. */
export async function startRouterFromFlags(
  f: GatewayClientFlags & { requestTimeout: number },
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
