import { readFileSync } from 'node:fs';
import { AuthMethodError, type HeaderAuthMethod, parseAuthMethod, TokenAuthority } from '@pullplane/auth';
import type { InferConfig } from '@pullplane/config';
import { type CallerAuthOptions, createResourceProxy, type ResourceProxy } from '@pullplane/resource-proxy';
import { createProxyReplica, type ProxyReplica, type ProxyReplicaDeps } from '@pullplane/router';
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

export type ResourceProxyAppDeps = Omit<ProxyReplicaDeps, 'name'>;

export type ResourceProxyApp = ProxyReplica<ResourceProxy>;

/** Builds the resource proxy service, unstarted. */
export function createResourceProxyApp(c: ResourceProxyConfig, deps: ResourceProxyAppDeps): ResourceProxyApp {
  const { logger, registry } = deps;
  return createProxyReplica(
    c,
    { ...deps, name: 'resource-proxy' },
    async (router) => {
      const method = parseAuthMethod(c.auth);
      const auth: CallerAuthOptions = {
        ...(c.tokenKeyPath
          ? { tokens: await TokenAuthority.fromFile(c.tokenKeyPath, { audience: 'resource-proxy' }) }
          : {}),
        ...(method.kind === 'header'
          ? { meshIdentity: { method: method as HeaderAuthMethod, allowed: c.allowedCallers } }
          : {}),
      };
      const proxy = createResourceProxy({
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
      return proxy;
    },
    () => ({ auth: c.auth }),
  );
}
