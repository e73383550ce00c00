import { readFileSync } from 'node:fs';
import { AuthMethodError, type HeaderAuthMethod, parseAuthMethod, TokenAuthority } from '@pullplane/auth';
import { type Bus, connectBusFromFlags } from '@pullplane/bus';
import type { InferConfig } from '@pullplane/config';
import { type CallerAuthOptions, createResourceProxy, type ResourceProxy } from '@pullplane/resource-proxy';
import { type AgentRouter, startRouterFromFlags } from '@pullplane/router';
import { createOpsServer, type OpsServer } from '@pullplane/telemetry';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { resourceProxyOptions } from './options.js';

export type ResourceProxyConfig = InferConfig<typeof resourceProxyOptions>;

const isLoopback = (h: string) => h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);

export function validateResourceProxyConfig(c: ResourceProxyConfig): string[] {
  if (!c.enableResourceProxy) return [];
  const problems: string[] = [];
  let kind: string | undefined;
  try {
    kind = parseAuthMethod(c.auth).kind;
  } catch (err) {
    problems.push(`--auth: ${err instanceof AuthMethodError ? err.message : String(err)}`);
  }
  if (kind === 'token')
    problems.push('--auth=token is not a caller method here: set --token-key-path with --auth=mtls');
  if (c.insecurePlaintext) {
    if (kind && kind !== 'header')
      problems.push('--insecure-plaintext requires a mesh identity header (--auth=header:…, istio, linkerd)');
    if (!isLoopback(c.listenHost) && !c.allowInsecureNonLoopback) {
      problems.push(
        `--insecure-plaintext on --listen-host=${c.listenHost} lets anyone who reaches the port forge identity headers; bind 127.0.0.1 or pass --allow-insecure-non-loopback`,
      );
    }
    if (c.allowedCallers.length === 0)
      problems.push('--allowed-callers must name who may use the proxy in mesh mode');
  } else {
    if (!c.resourceProxyCertPath || !c.resourceProxyKeyPath) {
      problems.push(
        'TLS needs --resource-proxy-cert-path and --resource-proxy-key-path (or --insecure-plaintext behind a mesh)',
      );
    }
    if (kind === 'header')
      problems.push('a mesh identity header is only trusted with --insecure-plaintext on loopback');
    if (kind === 'mtls' && !c.resourceProxyCaPath && !c.tokenKeyPath) {
      problems.push(
        'callers need a way in: --resource-proxy-ca-path (client certificates) and/or --token-key-path (tokens)',
      );
    }
  }
  if (!c.gatewayPlaintext && (!c.gatewayCertPath || !c.gatewayKeyPath)) {
    problems.push(
      'reaching gateways needs --gateway-cert-path and --gateway-key-path (or --gateway-plaintext behind a mesh)',
    );
  }
  return problems;
}

export interface ResourceProxyAppDeps {
  logger: Logger;
  registry: Registry;
  /** Overrides the NATS connection (tests, single-process mode). */
  bus?: Bus;
}

export interface ResourceProxyApp {
  readonly ops: OpsServer;
  readonly proxy: ResourceProxy | undefined;
  readonly router: AgentRouter | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Builds the resource proxy service, unstarted. */
export function createResourceProxyApp(c: ResourceProxyConfig, deps: ResourceProxyAppDeps): ResourceProxyApp {
  const { logger, registry } = deps;
  const ops = createOpsServer({
    host: '0.0.0.0',
    healthzPort: c.healthzPort,
    metricsPort: c.metricsPort,
    registry,
    logger,
  });
  let bus = deps.bus;
  let router: AgentRouter | undefined;
  let proxy: ResourceProxy | undefined;
  ops.addReadinessCheck('bus', () => (bus?.status === 'connected' ? true : 'not connected to NATS'));
  ops.addReadinessCheck('listener', () => (proxy ? true : 'not listening yet'));
  return {
    ops,
    get proxy() {
      return proxy;
    },
    get router() {
      return router;
    },
    async start() {
      await ops.listen();
      bus ??= await connectBusFromFlags(c, { name: 'resource-proxy', logger });
      router = await startRouterFromFlags(c, { bus, logger });
      const method = parseAuthMethod(c.auth);
      const auth: CallerAuthOptions = {
        ...(c.tokenKeyPath
          ? { tokens: await TokenAuthority.fromFile(c.tokenKeyPath, { audience: 'resource-proxy' }) }
          : {}),
        ...(method.kind === 'header'
          ? { meshIdentity: { method: method as HeaderAuthMethod, allowed: c.allowedCallers } }
          : {}),
      };
      proxy = createResourceProxy({
        router,
        logger,
        registry,
        host: c.listenHost,
        port: c.listenPort,
        ...(c.insecurePlaintext || !c.resourceProxyCertPath || !c.resourceProxyKeyPath
          ? {}
          : {
              tls: {
                cert: readFileSync(c.resourceProxyCertPath),
                key: readFileSync(c.resourceProxyKeyPath),
                ...(c.resourceProxyCaPath ? { ca: readFileSync(c.resourceProxyCaPath) } : {}),
              },
            }),
        auth,
        requestTimeoutMs: c.requestTimeout,
        maxRequestBodyBytes: c.maxRequestBody,
        impersonators: c.impersonationAllowedCallers,
      });
      await proxy.listen();
      logger.info({ port: proxy.port, auth: c.auth }, 'resource proxy started');
    },
    async stop() {
      ops.markShuttingDown();
      await proxy?.close(c.drainTimeout);
      router?.stop();
      if (!deps.bus) await bus?.close();
      await ops.close();
    },
  };
}
