import type { FrontMaterial } from '@pullplane/http-front';
import {
  caBundleSpec,
  keyPairSpec,
  kubeApiConfigured,
  loadKubeAccess,
  openMaterials,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { ExtensionProxyServiceFlags } from './service-options.js';

export function proxyMaterialProblems(
  c: ExtensionProxyServiceFlags,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  if (c.insecurePlaintext || (c.tlsCertPath && c.tlsKeyPath)) return [];
  if (kubeApiConfigured({ kubeconfig: c.kubeconfig }, env)) return [];
  return [
    `TLS needs --tls-cert-path and --tls-key-path, or the Secret ${c.tlsSecretName} (--tls-secret-name) through a Kubernetes API (in-cluster, --kubeconfig or $KUBECONFIG), or --insecure-plaintext behind a mesh`,
  ];
}

/** The listener's pair and the CA of the Argo CD server's client certificate. */
export type ProxyMaterial = FrontMaterial;

/**
 * The server certificate and the CA of the Argo CD server's client certificate: files win,
 * Secrets are watched. Behind a mesh (plaintext on loopback) there is neither.
 */
export async function openProxyMaterial(
  c: ExtensionProxyServiceFlags,
  logger: Logger,
): Promise<ProxyMaterial> {
  if (c.insecurePlaintext)
    return {
      serverTls: undefined,
      clientCa: undefined,
      reload: async () => undefined,
      observe: () => undefined,
      stop: () => undefined,
    };
  const wantsSecret = !(c.tlsCertPath && c.tlsKeyPath) || !c.clientCaPath;
  const kubeConfig =
    wantsSecret && kubeApiConfigured({ kubeconfig: c.kubeconfig })
      ? loadKubeAccess({ kubeconfig: c.kubeconfig, kubecontext: c.kubecontext })
      : undefined;
  return openMaterials({ kubeConfig, namespace: c.namespace, logger }, async (set) => ({
    serverTls: await set.open(
      keyPairSpec('the extension proxy server certificate', {
        kind: 'server',
        files: { cert: c.tlsCertPath, key: c.tlsKeyPath },
        secret: set.secret(c.tlsSecretName, '--tls-secret-name'),
        required: true,
        fileOptions: '--tls-cert-path and --tls-key-path',
      }),
    ),
    clientCa: await set.open(
      caBundleSpec("the CA of the Argo CD server's client certificate", {
        kind: 'client-ca',
        file: c.clientCaPath,
        secret: set.secret(c.clientCaSecretName, '--client-ca-secret-name'),
        required: c.clientCaPath !== undefined,
        fileOptions: '--client-ca-path',
      }),
    ),
  }));
}
