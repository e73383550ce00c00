import type { KubeConfig } from '@kubernetes/client-node';
import type { AuthMethod } from '@pullplane/auth';
import {
  caBundleSpec,
  type KeyPair,
  keyPairSpec,
  kubeApiConfigured,
  loadKubeAccess,
  type Material,
  type OpenedMaterials,
  openMaterials,
  signingKeySpec,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { GatewayServiceConfig } from './gateway-options.js';

/** What the configuration needs: each piece comes from its file, else from its Secret. */
export interface GatewayNeeds {
  serverTls: boolean;
  rootCa: boolean;
  agentTokenKey: boolean;
  registrationKey: boolean;
}

export function gatewayNeeds(
  c: GatewayServiceConfig,
  agent: AuthMethod | undefined,
  internal: AuthMethod | undefined,
): GatewayNeeds {
  const tls = !c.insecurePlaintext;
  return {
    serverTls: tls,
    rootCa: tls && (agent?.kind === 'mtls' || internal?.kind === 'mtls'),
    agentTokenKey: agent?.kind === 'token',
    registrationKey: registrationUrl(c) !== undefined,
  };
}

/** --resource-proxy-url, or argocd-agent's --enable-self-cluster-registration with --resource-proxy-address. */
export function registrationUrl(c: GatewayServiceConfig): string | undefined {
  if (c.resourceProxyUrl) return c.resourceProxyUrl;
  if (!c.enableSelfClusterRegistration) return undefined;
  const { host, port } = c.resourceProxyAddress;
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Problems with where the needed material comes from, for the startup report: a missing
 * file option is fine when the Secret can be read, which needs a Kubernetes API.
 */
export function gatewayMaterialProblems(
  c: GatewayServiceConfig,
  needs: GatewayNeeds,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const kube = kubeApiConfigured({ kubeconfig: c.kubeconfig }, env);
  const problems: string[] = [];
  const viaSecret = (secret: string, option: string) =>
    kube
      ? ''
      : `, or the Secret ${secret} (${option}) through a Kubernetes API, but none is configured (in-cluster, --kubeconfig or $KUBECONFIG)`;
  if (needs.serverTls && !(c.tlsCert && c.tlsKey) && !kube)
    problems.push(
      `TLS needs --tls-cert and --tls-key${viaSecret(c.tlsSecretName, '--tls-secret-name')} (or --insecure-plaintext behind a mesh)`,
    );
  if (needs.rootCa && !c.rootCaPath && !kube)
    problems.push(
      `--auth=mtls and --internal-auth=mtls need --root-ca-path${viaSecret(c.tlsCaSecretName, '--tls-ca-secret-name')} to verify client certificates`,
    );
  if (needs.agentTokenKey && !c.tokenKeyPath && !kube)
    problems.push(`--auth=token needs --token-key-path${viaSecret(c.jwtSecretName, '--jwt-secret-name')}`);
  if (needs.registrationKey && !c.registrationTokenKeyPath && !kube)
    problems.push(
      `cluster registration needs --registration-token-key-path${viaSecret(c.jwtSecretName, '--jwt-secret-name')}`,
    );
  return problems;
}

export interface GatewayMaterial extends OpenedMaterials {
  /** The control-plane cluster's API (Secrets, cluster registration), when either is used. */
  readonly kubeConfig: KubeConfig | undefined;
  readonly serverTls: Material<KeyPair> | undefined;
  readonly rootCa: Material<Buffer> | undefined;
  readonly agentTokenKey: Material<string> | undefined;
  readonly registrationKey: Material<string> | undefined;
}

/** Opens the gateway's certificates and keys: files where given, watched Secrets otherwise. */
export async function openGatewayMaterial(
  c: GatewayServiceConfig,
  needs: GatewayNeeds,
  logger: Logger,
): Promise<GatewayMaterial> {
  const wantsSecret =
    (needs.serverTls && !(c.tlsCert && c.tlsKey)) ||
    (needs.rootCa && !c.rootCaPath) ||
    (needs.agentTokenKey && !c.tokenKeyPath) ||
    (needs.registrationKey && !c.registrationTokenKeyPath);
  const kubeConfig =
    wantsSecret || needs.registrationKey
      ? loadKubeAccess({ kubeconfig: c.kubeconfig, kubecontext: c.kubecontext })
      : undefined;
  return openMaterials(
    { kubeConfig: wantsSecret ? kubeConfig : undefined, namespace: c.argocdNamespace, logger },
    async (set) => {
      const serverTls = needs.serverTls
        ? await set.open(
            keyPairSpec('the gateway server certificate', {
              kind: 'server',
              files: { cert: c.tlsCert, key: c.tlsKey },
              secret: set.secret(c.tlsSecretName, '--tls-secret-name'),
              required: true,
              fileOptions: '--tls-cert and --tls-key',
            }),
          )
        : undefined;
      const rootCa =
        needs.rootCa || (c.rootCaPath && !c.insecurePlaintext)
          ? await set.open(
              caBundleSpec('the CA of agent and proxy certificates', {
                kind: 'client-ca',
                file: c.rootCaPath,
                secret: set.secret(c.tlsCaSecretName, '--tls-ca-secret-name'),
                required: true,
                fileOptions: '--root-ca-path',
              }),
            )
          : undefined;
      const jwt = (file: string | undefined, what: string, kind: string, fileOption: string) =>
        set.open(
          signingKeySpec(what, {
            kind,
            file,
            secret: set.secret(c.jwtSecretName, '--jwt-secret-name'),
            required: true,
            fileOptions: fileOption,
          }),
        );
      const agentTokenKey = needs.agentTokenKey
        ? await jwt(c.tokenKeyPath, 'the agent token key', 'token-key', '--token-key-path')
        : undefined;
      const registrationKey = needs.registrationKey
        ? await jwt(
            c.registrationTokenKeyPath,
            'the cluster registration token key',
            'registration-key',
            '--registration-token-key-path',
          )
        : undefined;
      return { kubeConfig, serverTls, rootCa, agentTokenKey, registrationKey };
    },
  );
}
