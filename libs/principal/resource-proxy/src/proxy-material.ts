import {
  CALLER_TOKEN_AUDIENCE,
  CachedTokenVerifier,
  type DenyList,
  ReloadableTokenVerifier,
  TOKEN_ISSUER,
  TokenAuthority,
  type TokenVerifier,
  verifierByIssuer,
} from '@pullplane/auth';
import type { FrontMaterial } from '@pullplane/http-front';
import {
  caBundleSpec,
  keyPairSpec,
  kubeApiConfigured,
  loadKubeAccess,
  openMaterials,
  signingKeySpec,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { ResourceProxyServiceFlags } from './service-options.js';

/** argocd-agent's principal signs the tokens of its cluster Secrets with this issuer and audience. */
export const ARGOCD_AGENT_TOKEN_ISSUER = 'argocd-agent-server';
export const ARGOCD_AGENT_RESOURCE_PROXY_AUDIENCE = 'argocd-agent-server-resource-proxy';

/** Problems with where the certificate, CA and token key come from (files, or Secrets through a Kubernetes API). */
export function proxyMaterialProblems(
  c: ResourceProxyServiceFlags,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const kube = kubeApiConfigured({ kubeconfig: c.kubeconfig }, env);
  const problems: string[] = [];
  const none = 'no Kubernetes API is configured (in-cluster, --kubeconfig or $KUBECONFIG)';
  if (!c.insecurePlaintext && !(c.resourceProxyCertPath && c.resourceProxyKeyPath) && !kube) {
    problems.push(
      `TLS needs --resource-proxy-cert-path and --resource-proxy-key-path, or the Secret ${c.resourceProxySecretName} (--resource-proxy-secret-name), but ${none} (or --insecure-plaintext behind a mesh)`,
    );
  }
  if (c.adoptArgocdAgentClusters && !c.tokenKeyPath && !kube) {
    problems.push(
      `--adopt-argocd-agent-clusters verifies argocd-agent's tokens with its JWT key: give --token-key-path (--jwt-key), or the Secret ${c.jwtSecretName} (--jwt-secret-name), but ${none}`,
    );
  }
  return problems;
}

export interface ProxyMaterial extends FrontMaterial {
  /** Verifies caller tokens (ours, and argocd-agent's with --adopt-argocd-agent-clusters); follows key rotations. */
  readonly tokens: ReloadableTokenVerifier | undefined;
  /**
   * `tokens` remembering what it accepted until expiry (what requests use): forgotten on
   * revocation and when the key changes.
   */
  readonly cachedTokens: CachedTokenVerifier | undefined;
}

/**
 * The resource proxy's server certificate (required unless plaintext), the CA of caller
 * certificates and the token key (each optional when read from a Secret: absent leaves that
 * way in closed). Files win; Secrets are watched.
 */
export async function openProxyMaterial(
  c: ResourceProxyServiceFlags,
  mesh: boolean,
  denyList: DenyList,
  logger: Logger,
): Promise<ProxyMaterial> {
  const needTls = !c.insecurePlaintext;
  const wantsSecret =
    (needTls && !(c.resourceProxyCertPath && c.resourceProxyKeyPath)) ||
    (needTls && !mesh && !c.resourceProxyCaPath) ||
    (!mesh && !c.tokenKeyPath);
  const kubeConfig =
    wantsSecret && kubeApiConfigured({ kubeconfig: c.kubeconfig })
      ? loadKubeAccess({ kubeconfig: c.kubeconfig, kubecontext: c.kubecontext })
      : undefined;
  return openMaterials({ kubeConfig, namespace: c.namespace, logger }, async (set) => {
    const serverTls = needTls
      ? await set.open(
          keyPairSpec('the resource proxy server certificate', {
            kind: 'server',
            files: { cert: c.resourceProxyCertPath, key: c.resourceProxyKeyPath },
            secret: set.secret(c.resourceProxySecretName, '--resource-proxy-secret-name'),
            required: true,
            fileOptions: '--resource-proxy-cert-path and --resource-proxy-key-path',
          }),
        )
      : undefined;
    // Behind a mesh, callers are mesh identities: no certificate or token material unless given.
    const clientCa =
      needTls && (!mesh || c.resourceProxyCaPath)
        ? await set.open(
            caBundleSpec('the CA of caller certificates', {
              kind: 'client-ca',
              file: c.resourceProxyCaPath,
              secret: set.secret(c.resourceProxyCaSecretName, '--resource-proxy-ca-secret-name'),
              required: c.resourceProxyCaPath !== undefined,
              fileOptions: '--resource-proxy-ca-path',
            }),
          )
        : undefined;
    const key =
      !mesh || c.tokenKeyPath
        ? await set.open(
            signingKeySpec('the caller token key', {
              kind: 'token-key',
              file: c.tokenKeyPath,
              secret: set.secret(c.jwtSecretName, '--jwt-secret-name'),
              required: c.tokenKeyPath !== undefined || c.adoptArgocdAgentClusters,
              fileOptions: '--token-key-path',
            }),
          )
        : undefined;
    let tokens: ReloadableTokenVerifier | undefined;
    let cachedTokens: CachedTokenVerifier | undefined;
    if (key) {
      const build = (pem: string) => callerTokenVerifier(pem, c.adoptArgocdAgentClusters, denyList);
      tokens = new ReloadableTokenVerifier(key.current ? await build(key.current) : undefined);
      const t = tokens;
      const cache = new CachedTokenVerifier(t, { denyList });
      cachedTokens = cache;
      key.onChange((pem) => {
        build(pem).then(
          (v) => {
            t.set(v);
            cache.clear();
          },
          (err: unknown) =>
            logger.error(
              { err: String(err) },
              'the caller token key changed to an unusable key; keeping the current one',
            ),
        );
      });
    }
    return { serverTls, clientCa, tokens, cachedTokens };
  });
}

/**
 * Our caller tokens (issuer pullplane, audience resource-proxy) and, when adopting
 * argocd-agent's cluster Secrets, argocd-agent's resource-proxy tokens (its issuer and
 * audience, signed by the same key): told apart by issuer, each checked in full. argocd-agent's
 * agent access tokens carry another audience and are refused.
 */
async function callerTokenVerifier(pem: string, adopt: boolean, denyList: DenyList): Promise<TokenVerifier> {
  const ours = await TokenAuthority.fromPem(pem, { audience: CALLER_TOKEN_AUDIENCE, denyList });
  if (!adopt) return ours;
  const theirs = await TokenAuthority.fromPem(pem, {
    issuer: ARGOCD_AGENT_TOKEN_ISSUER,
    audience: ARGOCD_AGENT_RESOURCE_PROXY_AUDIENCE,
    denyList,
  });
  return verifierByIssuer(
    new Map<string, TokenVerifier>([
      [TOKEN_ISSUER, ours],
      [ARGOCD_AGENT_TOKEN_ISSUER, theirs],
    ]),
  );
}
