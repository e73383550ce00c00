import {
  caBundleSpec,
  type KeyPair,
  keyPairSpec,
  kubeApiConfigured,
  loadKubeAccess,
  type Material,
  openMaterial,
  SecretStore,
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

export interface ProxyMaterial {
  readonly serverTls: Material<KeyPair> | undefined;
  readonly clientCa: Material<Buffer> | undefined;
  reload(): Promise<void>;
  stop(): void;
}

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
      stop: () => undefined,
    };
  const wantsSecret = !(c.tlsCertPath && c.tlsKeyPath) || !c.clientCaPath;
  const kube =
    wantsSecret && kubeApiConfigured({ kubeconfig: c.kubeconfig })
      ? loadKubeAccess({ kubeconfig: c.kubeconfig, kubecontext: c.kubecontext })
      : undefined;
  const store = kube ? new SecretStore(kube, c.namespace, logger) : undefined;
  const secret = (name: string, option: string) => (store ? { store, name, option } : undefined);
  const opened: Material<unknown>[] = [];
  try {
    const serverTls = await openMaterial(
      keyPairSpec('the extension proxy server certificate', {
        files: { cert: c.tlsCertPath, key: c.tlsKeyPath },
        secret: secret(c.tlsSecretName, '--tls-secret-name'),
        required: true,
        fileOptions: '--tls-cert-path and --tls-key-path',
      }),
      logger,
    );
    opened.push(serverTls as Material<unknown>);
    const clientCa = await openMaterial(
      caBundleSpec("the CA of the Argo CD server's client certificate", {
        file: c.clientCaPath,
        secret: secret(c.clientCaSecretName, '--client-ca-secret-name'),
        required: c.clientCaPath !== undefined,
        fileOptions: '--client-ca-path',
      }),
      logger,
    );
    opened.push(clientCa as Material<unknown>);
    return {
      serverTls,
      clientCa,
      async reload() {
        await Promise.all(opened.map((m) => m.reload()));
      },
      stop() {
        for (const m of opened) m.stop();
        store?.stop();
      },
    };
  } catch (err) {
    for (const m of opened) m.stop();
    store?.stop();
    throw err;
  }
}
