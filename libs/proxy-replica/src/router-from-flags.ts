import { readFileSync } from 'node:fs';
import { type ChannelCredentials, credentials } from '@grpc/grpc-js';
import type { Bus } from '@pullplane/bus';
import { AgentRouter } from '@pullplane/router';
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

/** What is missing for reaching gateways (each proxy's config validation reports it). */
export function gatewayClientProblems(f: GatewayClientFlags): string[] {
  if (f.gatewayPlaintext || (f.gatewayCertPath && f.gatewayKeyPath)) return [];
  return [
    'reaching gateways needs --gateway-cert-path and --gateway-key-path (or --gateway-plaintext behind a mesh)',
  ];
}

/** mTLS towards gateways' internal listeners, or plaintext when a mesh sidecar adds it. */
export function gatewayCredentials(f: GatewayClientFlags): ChannelCredentials {
  if (f.gatewayPlaintext) return credentials.createInsecure();
  if (!f.gatewayCertPath || !f.gatewayKeyPath) throw new Error(gatewayClientProblems(f).join('; '));
  return credentials.createSsl(
    f.gatewayCaPath ? readFileSync(f.gatewayCaPath) : null,
    readFileSync(f.gatewayKeyPath),
    readFileSync(f.gatewayCertPath),
  );
}

/** A started router for a proxy replica, configured from its gateway-client flags. */
export async function startRouterFromFlags(
  f: GatewayClientFlags & { requestTimeout: number },
  deps: { bus: Bus; logger: Logger; registry?: Registry },
): Promise<AgentRouter> {
  const router = new AgentRouter({
    bus: deps.bus,
    logger: deps.logger.child({ component: 'router' }),
    credentials: gatewayCredentials(f),
    routeTimeoutMs: f.requestTimeout,
    ...(deps.registry ? { registry: deps.registry } : {}),
    ...(f.gatewayServerName ? { serverNameOverride: f.gatewayServerName } : {}),
  });
  await router.start();
  return router;
}
