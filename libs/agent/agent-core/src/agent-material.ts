import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { checkPath } from '@pullplane/config';
import { type TunnelCredentials, tunnelCredentials } from '@pullplane/grpc-frames';
import {
  caBundleSpec,
  type KeyPair,
  keyPairSpec,
  kubeApiConfigured,
  type Material,
  type OpenedMaterials,
  openMaterials,
  type TlsProtocolSettings,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { AgentServiceConfig } from './agent-options.js';

export type CredsMode = { kind: 'mtls' } | { kind: 'header' } | { kind: 'token'; file: string };

export const USERPASS_REFUSED =
  "argocd-agent's userpass: credentials are not supported (deprecated there too): use mtls: with the agent's certificate from `pullplane agent create` (--tls-client-cert and --tls-client-key, or the Secret --tls-secret-name), token:<file>, or header: behind a mesh";

/** `mtls:`, `header:` or `token:<file>`; anything else (argocd-agent's `userpass:`) is a problem to report. */
export function parseCreds(spec: string): CredsMode | { problem: string } {
  if (spec.startsWith('userpass:') || spec === 'userpass') return { problem: `--creds: ${USERPASS_REFUSED}` };
  if (spec.startsWith('header:')) return { kind: 'header' };
  if (spec.startsWith('token:') && spec.length > 'token:'.length)
    return { kind: 'token', file: spec.slice('token:'.length) };
  if (spec.startsWith('mtls:') || spec === 'mtls') return { kind: 'mtls' };
  return { problem: `--creds: ${JSON.stringify(spec.split(':')[0])} is not mtls:, header: or token:<file>` };
}

/** Where the agent's TLS material comes from, and whether that can work. */
export function agentMaterialProblems(
  c: AgentServiceConfig,
  creds: CredsMode,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const problems: string[] = [];
  const kube = kubeApiConfigured({ kubeconfig: c.kubeconfig }, env);
  if (creds.kind === 'mtls' && !(c.tlsClientCert && c.tlsClientKey) && !kube) {
    problems.push(
      `--creds=mtls: needs --tls-client-cert and --tls-client-key, or the Secret ${c.tlsSecretName} (--tls-secret-name) through the local Kubernetes API, which is not configured (in-cluster or --kubeconfig)`,
    );
  }
  if (c.redisTls && !c.redisTlsInsecure && c.redisCaPath) {
    const r = checkPath(c.redisCaPath, 'file', { cwd: process.cwd() });
    if (!r.ok)
      problems.push(`--redis-ca-path: ${JSON.stringify(c.redisCaPath)} ${r.reason} (needed by --redis-tls)`);
  }
  return problems;
}

/** The Redis password: --redis-password, else the `auth` file of Argo CD's file-based credentials. */
export function agentRedisPassword(c: AgentServiceConfig, logger?: Logger): string | undefined {
  if (c.redisPassword) return c.redisPassword;
  if (!c.redisCredsDirPath) return undefined;
  const read = (name: string) => {
    try {
      return readFileSync(path.join(c.redisCredsDirPath!, name), 'utf8').replace(/[\r\n]+$/, '') || undefined;
    } catch {
      return undefined;
    }
  };
  if (read('auth_username') && logger)
    logger.warn(
      'REDIS_CREDS_DIR_PATH holds auth_username: Redis ACL users are not supported; authenticating as the default user',
    );
  return read('auth');
}

export interface AgentMaterial extends OpenedMaterials {
  readonly clientPair: Material<KeyPair> | undefined;
  readonly rootCa: Material<Buffer> | undefined;
  readonly redisCa: Material<Buffer> | undefined;
  /** Credentials for the next tunnel: the current certificate, key and CA. */
  tunnelCredentials(): TunnelCredentials;
}

/**
 * The agent's client certificate and the gateway's CA (files, else the Secrets argocd-agent
 * names, in --namespace of the local cluster, watched), and the Redis CA. A rotated
 * certificate is used from the next connection on; the live tunnel is not cut.
 */
export async function openAgentMaterial(
  c: AgentServiceConfig,
  creds: CredsMode,
  kubeConfig: KubeConfig | undefined,
  protocol: TlsProtocolSettings | undefined,
  logger: Logger,
): Promise<AgentMaterial> {
  const tls = !(c.insecurePlaintext || creds.kind === 'header');
  return openMaterials({ kubeConfig, namespace: c.namespace, logger }, async (set) => {
    const clientPair =
      tls && (creds.kind === 'mtls' || (c.tlsClientCert && c.tlsClientKey))
        ? await set.open(
            keyPairSpec("the agent's client certificate", {
              kind: 'client',
              files: { cert: c.tlsClientCert, key: c.tlsClientKey },
              secret: set.secret(c.tlsSecretName, '--tls-secret-name'),
              required: true,
              fileOptions: '--tls-client-cert and --tls-client-key',
            }),
          )
        : undefined;
    const rootCa =
      tls && !c.insecureTls
        ? await set.open(
            caBundleSpec("the gateway's CA", {
              kind: 'ca',
              file: c.rootCaPath,
              secret: set.secret(c.rootCaSecretName, '--root-ca-secret-name'),
              required: c.rootCaPath !== undefined,
              fileOptions: '--root-ca-path',
            }),
          )
        : undefined;
    const redisCa =
      c.redisTls && !c.redisTlsInsecure
        ? await set.open(
            caBundleSpec("the local Redis' CA", {
              kind: 'redis-ca',
              file: c.redisCaPath,
              secret: set.secret(c.redisTlsCaSecretName, '--redis-tls-ca-secret-name', ['ca.crt']),
              required: c.redisCaPath !== undefined,
              fileOptions: '--redis-ca-path',
            }),
          )
        : undefined;
    return {
      clientPair,
      rootCa,
      redisCa,
      tunnelCredentials() {
        if (!tls) return tunnelCredentials.insecure();
        const pair = clientPair?.current;
        const context = createSecureContext({
          ...(rootCa?.current ? { ca: rootCa.current } : {}),
          ...(pair ? { cert: pair.cert, key: pair.key } : {}),
          ...(protocol
            ? {
                minVersion: protocol.minVersion,
                ...(protocol.maxVersion ? { maxVersion: protocol.maxVersion } : {}),
                ...(protocol.ciphers ? { ciphers: protocol.ciphers } : {}),
              }
            : {}),
        });
        return tunnelCredentials.fromSecureContext(context, { rejectUnauthorized: !c.insecureTls });
      },
    };
  });
}
