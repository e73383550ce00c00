import { type HeaderAuthMethod, parseCallerAuthMethod } from '@pullplane/auth';
import { followCallerRevocations, serveFront } from '@pullplane/http-front';
import { createProxyReplica, type ProxyReplica, type ProxyReplicaDeps } from '@pullplane/proxy-replica';
import type { Service } from '@pullplane/service';
import { tlsProtocolSettings } from '@pullplane/tls-material';
import { openProxyMaterial, type ProxyMaterial } from './proxy-material.js';
import type { CallerAuthOptions } from './request-target.js';
import { createResourceProxy, type ResourceProxy } from './resource-proxy.js';
import { resourceProxyStartupWarnings } from './service-checks.js';
import type { ResourceProxyServiceConfig } from './service-options.js';

/** What runs the service: logger, registry, tracer, shared ops, a bus or the gateway of this process. */
export type ResourceProxyServiceDeps = Omit<ProxyReplicaDeps, 'name'>;

export interface ResourceProxyService extends ProxyReplica<ResourceProxy>, Service {
  /** What an operator should know about a configuration accepted but weaker than it could be. */
  readonly warnings: readonly string[];
  /** Re-reads TLS material and keys from files and Secrets (SIGHUP; Secrets are also watched). */
  reloadTls(): Promise<void>;
}

/**
 * The resource proxy service, unstarted: ops endpoints, the presence bus and a router to the
 * gateways (or those handed in), revocations from the bus, the listener's certificate, the
 * callers' CA and token key (files or watched Secrets), and the proxy on its HTTP front.
 */
export function createResourceProxyService(
  c: ResourceProxyServiceConfig,
  deps: ResourceProxyServiceDeps,
): ResourceProxyService {
  const { logger, registry } = deps;
  const protocol = tlsProtocolSettings(c).settings;
  let reload: (() => Promise<void>) | undefined;
  const replica = createProxyReplica(
    c,
    { ...deps, name: 'resource-proxy' },
    async (router, bus) => {
      const method = parseCallerAuthMethod(c);
      let material: ProxyMaterial | undefined;
      // Followed before the material opens, so nothing revoked meanwhile is missed.
      const revocations = await followCallerRevocations(bus, logger, {
        forgetAgent: (agent) => material?.cachedTokens?.forgetAgent(agent),
        forgetToken: (jti) => material?.cachedTokens?.forgetToken(jti),
      });
      const opened = await openProxyMaterial(c, method.kind === 'header', revocations.denyList, logger);
      opened.observe(registry, 'resource-proxy');
      material = opened;
      if (
        method.kind === 'mtls' &&
        opened.clientCa?.current === undefined &&
        opened.tokens?.ready !== true &&
        !c.insecurePlaintext
      ) {
        opened.stop();
        revocations.stop();
        throw new Error(
          `callers have no way in: neither a caller CA (--resource-proxy-ca-path, Secret ${c.resourceProxyCaSecretName}) nor a token key (--token-key-path, Secret ${c.jwtSecretName}) is available`,
        );
      }
      const auth: CallerAuthOptions = {
        ...(opened.cachedTokens ? { tokens: opened.cachedTokens } : {}),
        ...(method.kind === 'header'
          ? { meshIdentity: { method: method as HeaderAuthMethod, allowed: c.allowedCallers } }
          : {}),
        isRevoked: revocations.isRevoked,
      };
      const served = serveFront(
        (tls) =>
          createResourceProxy({
            router,
            isKnownAgent: (agent) => router.lookup(agent) !== undefined,
            logger,
            registry,
            host: c.listenHost,
            port: c.listenPort,
            ...(tls ? { tls } : {}),
            auth,
            requestTimeoutMs: c.requestTimeout,
            maxRequestBodyBytes: c.maxRequestBody,
            impersonators: c.impersonationAllowedCallers,
            openExchanges: revocations.openExchanges,
            tracer: deps.tracer,
          }),
        {
          service: 'resource-proxy',
          bus,
          logger,
          material: opened,
          revocations,
          protocol,
        },
      );
      reload = served.reload;
      return served.front;
    },
    () => ({ auth: c.auth, adoptArgocdAgentClusters: c.adoptArgocdAgentClusters }),
  );
  const reloadTls = async () => void (await reload?.());
  return Object.assign(replica, { warnings: resourceProxyStartupWarnings(c), reloadTls, reload: reloadTls });
}
