import { readFileSync } from 'node:fs';
import {
  CachedTokenVerifier,
  type HeaderAuthMethod,
  parseCallerAuthMethod,
  TokenAuthority,
} from '@pullplane/auth';
import { followCallerRevocations, serveFront } from '@pullplane/http-front';
import { createProxyReplica, type ProxyReplica, type ProxyReplicaDeps } from '@pullplane/proxy-replica';
import type { Service } from '@pullplane/service';
import { tlsProtocolSettings } from '@pullplane/tls-material';
import { createExtensionProxy, type ExtensionProxy } from './extension-proxy.js';
import { openProxyMaterial } from './proxy-material.js';
import type { ExtensionProxyServiceConfig } from './service-options.js';

/** Audience of the bearer tokens the Argo CD server presents (`pullplane extensions token`). */
export const EXTENSION_PROXY_AUDIENCE = 'extension-proxy';

/** What runs the service: logger, registry, tracer, shared ops, a bus or the gateway of this process. */
export type ExtensionProxyServiceDeps = Omit<ProxyReplicaDeps, 'name'>;

export interface ExtensionProxyService extends ProxyReplica<ExtensionProxy>, Service {
  /** Re-reads TLS material from files and Secrets (SIGHUP; Secrets are also watched). */
  reloadTls(): Promise<void>;
}

/**
 * The extension proxy service, unstarted: ops endpoints, the presence bus and a router to the
 * gateways (or those handed in), revocations from the bus, the listener's certificate and the
 * Argo CD server's CA (files or watched Secrets), its token key, and the proxy on its HTTP front.
 */
export function createExtensionProxyService(
  c: ExtensionProxyServiceConfig,
  deps: ExtensionProxyServiceDeps,
): ExtensionProxyService {
  const { logger, registry } = deps;
  const protocol = tlsProtocolSettings(c).settings;
  let reload: (() => Promise<void>) | undefined;
  const replica = createProxyReplica(
    c,
    { ...deps, name: 'extension-proxy' },
    async (router, bus) => {
      const method = parseCallerAuthMethod(c);
      let tokens: CachedTokenVerifier | undefined;
      const revocations = await followCallerRevocations(bus, logger, {
        forgetAgent: (agent) => tokens?.forgetAgent(agent),
        forgetToken: (jti) => tokens?.forgetToken(jti),
      });
      const material = await openProxyMaterial(c, logger);
      material.observe(registry, 'extension-proxy');
      // Argo CD sends the same token on every request: its signature is checked once, then
      // the token is remembered until it expires or is revoked.
      tokens = c.tokenKeyPath
        ? new CachedTokenVerifier(
            await TokenAuthority.fromPem(readFileSync(c.tokenKeyPath, 'utf8'), {
              audience: EXTENSION_PROXY_AUDIENCE,
              denyList: revocations.denyList,
            }),
            { denyList: revocations.denyList },
          )
        : undefined;
      if (!c.insecurePlaintext && material.clientCa?.current === undefined && !tokens)
        logger.warn(
          `no CA for client certificates (--client-ca-path, Secret ${c.clientCaSecretName}) and no --token-key-path: every caller is refused until a CA appears`,
        );
      const served = serveFront(
        (tls) =>
          createExtensionProxy({
            router,
            logger,
            registry,
            host: c.listenHost,
            port: c.listenPort,
            ...(tls ? { tls } : {}),
            auth: {
              allowed: c.allowedCallers,
              ...(method.kind === 'header' ? { meshIdentity: method as HeaderAuthMethod } : {}),
              ...(tokens ? { tokens } : {}),
            },
            clusterUrlBases: c.resourceProxyUrl,
            requestTimeoutMs: c.requestTimeout,
            maxRequestBodyBytes: c.maxRequestBody,
            isRevoked: revocations.isRevoked,
            isKnownAgent: (agent) => router.lookup(agent) !== undefined,
            openExchanges: revocations.openExchanges,
            tracer: deps.tracer,
          }),
        {
          service: 'extension-proxy',
          bus,
          logger,
          material,
          revocations,
          protocol,
        },
      );
      reload = served.reload;
      return served.front;
    },
    () => ({ auth: c.auth, resourceProxyUrls: c.resourceProxyUrl }),
  );
  const reloadTls = async () => void (await reload?.());
  return Object.assign(replica, { reloadTls, reload: reloadTls });
}
