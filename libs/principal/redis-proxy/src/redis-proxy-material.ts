import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { PeerCertificate } from 'node:tls';
import { identityFromPeerCertificate } from '@pullplane/auth';
import { checkPath } from '@pullplane/config';
import {
  caBundleSpec,
  type KeyPair,
  keyPairSpec,
  kubeApiConfigured,
  loadKubeAccess,
  type Material,
  type OpenedMaterials,
  openMaterials,
} from '@pullplane/tls-material';
import type { Logger } from 'pino';
import type { RedisProxyServiceConfig } from './redis-proxy-options.js';

/**
 * Where the listener's certificate comes from: ours (--tls-cert-path) whenever given;
 * otherwise, with argocd-agent's --redis-tls (TLS both ways), argocd-agent's files or its
 * Secret; otherwise the listener is plaintext.
 */
export function listenerTlsSource(
  c: RedisProxyServiceConfig,
): 'ours' | 'argocd-agent-files' | 'secret' | undefined {
  if (c.tlsCertPath && c.tlsKeyPath) return 'ours';
  if (!c.redisTls) return undefined;
  if (c.redisProxyServerTlsCert && c.redisProxyServerTlsKey) return 'argocd-agent-files';
  return 'secret';
}

/** Problems with the TLS material's sources: files that must exist when used, Secrets that need a Kubernetes API. */
export function redisProxyMaterialProblems(
  c: RedisProxyServiceConfig,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  const problems: string[] = [];
  const ctx = { cwd: process.cwd() };
  const mustExist = (flag: string, p: string | undefined) => {
    if (p === undefined) return;
    const r = checkPath(p, 'file', ctx);
    if (!r.ok) problems.push(`--${flag}: ${JSON.stringify(p)} ${r.reason} (needed by --redis-tls)`);
  };
  if ((c.redisProxyServerTlsCert === undefined) !== (c.redisProxyServerTlsKey === undefined) && c.redisTls)
    problems.push('--redis-proxy-server-tls-cert and --redis-proxy-server-tls-key go together');
  const source = listenerTlsSource(c);
  if (source === 'argocd-agent-files') {
    mustExist('redis-proxy-server-tls-cert', c.redisProxyServerTlsCert);
    mustExist('redis-proxy-server-tls-key', c.redisProxyServerTlsKey);
  }
  const kube = kubeApiConfigured({ kubeconfig: c.kubeconfig }, env);
  if (source === 'secret' && !kube) {
    problems.push(
      `--redis-tls serves TLS on the listener too: give --tls-cert-path and --tls-key-path (or --redis-proxy-server-tls-cert and -key), or the Secret ${c.redisProxyServerTlsSecretName} (--redis-proxy-server-tls-secret-name) through a Kubernetes API, but none is configured (in-cluster, --kubeconfig or $KUBECONFIG)`,
    );
  }
  if (c.redisTls && !c.redisTlsInsecure) mustExist('redis-ca-path', c.redisCaPath);
  if (c.tlsClientCaPath && !source)
    problems.push(
      '--tls-client-ca-path needs TLS on the listener (--tls-cert-path and --tls-key-path, or --redis-tls)',
    );
  return problems;
}

/** The password: --redis-password, else the `auth` file of Argo CD's file-based credentials. */
export function redisPassword(c: RedisProxyServiceConfig): string | undefined {
  if (c.redisPassword) return c.redisPassword;
  if (!c.redisCredsDirPath) return undefined;
  try {
    return readFileSync(path.join(c.redisCredsDirPath, 'auth'), 'utf8').replace(/[\r\n]+$/, '') || undefined;
  } catch {
    return undefined;
  }
}

/** Only caller certificates (`spiffe://pullplane/caller/<name>`) use the proxy; an agent's never does. */
export function callerCertificatesOnly(peer: PeerCertificate): string | undefined {
  const id = identityFromPeerCertificate({ kind: 'mtls', match: 'common-name', spec: 'mtls' }, peer, {
    expect: 'caller',
    unmarkedHint:
      'issue the Argo CD server a caller certificate (`pullplane cert create --kind caller`) for --tls-client-ca-path',
  });
  return id.ok ? undefined : id.reason;
}

export interface RedisProxyMaterial extends OpenedMaterials {
  readonly listener: Material<KeyPair> | undefined;
  readonly clientCa: Material<Buffer> | undefined;
  /** CA of the principal Redis (with --redis-tls); undefined: system roots. */
  readonly redisCa: Material<Buffer> | undefined;
}

export async function openRedisProxyMaterial(
  c: RedisProxyServiceConfig,
  logger: Logger,
): Promise<RedisProxyMaterial> {
  const source = listenerTlsSource(c);
  const wantsRedisCa = c.redisTls && !c.redisTlsInsecure;
  const wantsSecret = source === 'secret' || (wantsRedisCa && !c.redisCaPath);
  const kubeConfig =
    wantsSecret && kubeApiConfigured({ kubeconfig: c.kubeconfig })
      ? loadKubeAccess({ kubeconfig: c.kubeconfig, kubecontext: c.kubecontext })
      : undefined;
  return openMaterials({ kubeConfig, namespace: c.namespace, logger }, async (set) => {
    const files =
      source === 'ours'
        ? { cert: c.tlsCertPath, key: c.tlsKeyPath }
        : source === 'argocd-agent-files'
          ? { cert: c.redisProxyServerTlsCert, key: c.redisProxyServerTlsKey }
          : { cert: undefined, key: undefined };
    const listener = source
      ? await set.open(
          keyPairSpec('the redis proxy listener certificate', {
            kind: 'server',
            files,
            secret:
              source === 'secret'
                ? set.secret(c.redisProxyServerTlsSecretName, '--redis-proxy-server-tls-secret-name')
                : undefined,
            required: true,
            fileOptions: '--tls-cert-path and --tls-key-path',
          }),
        )
      : undefined;
    const clientCa =
      source && c.tlsClientCaPath
        ? await set.open(
            caBundleSpec('the CA of client certificates', {
              kind: 'client-ca',
              file: c.tlsClientCaPath,
              required: true,
              fileOptions: '--tls-client-ca-path',
            }),
          )
        : undefined;
    const redisCa = wantsRedisCa
      ? await set.open(
          caBundleSpec("the principal Redis' CA", {
            kind: 'redis-ca',
            file: c.redisCaPath,
            secret: set.secret(c.redisCaSecretName, '--redis-ca-secret-name', ['ca.crt']),
            required: c.redisCaPath !== undefined,
            fileOptions: '--redis-ca-path',
          }),
        )
      : undefined;
    return { listener, clientCa, redisCa };
  });
}
