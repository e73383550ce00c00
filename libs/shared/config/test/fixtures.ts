import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { defineOptions } from '../src/index.js';

/** A principal-like option table covering every option type. */
export const principalOptions = defineOptions([
  {
    flag: 'listen-host',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_LISTEN_HOST',
    paramsKey: 'principal.listen.host',
    default: '',
    description: 'Address to listen on.',
  },
  {
    flag: 'listen-port',
    type: 'port',
    env: 'ARGOCD_PRINCIPAL_LISTEN_PORT',
    paramsKey: 'principal.listen.port',
    default: 8443,
    description: 'Port the gRPC server listens on.',
  },
  {
    flag: 'insecure-tls',
    type: 'boolean',
    env: ['ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT', 'ARGOCD_AGENT_TLS_INSECURE'],
    paramsKey: ['principal.tls.insecure-plaintext', 'principal.tls.insecure'],
    description: 'Serve plaintext.',
  },
  {
    flag: 'auth',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_AUTH',
    paramsKey: 'principal.auth',
    secret: true,
    description: 'Authentication method and its credentials.',
  },
  {
    flag: 'log-level',
    type: 'enum',
    values: ['trace', 'debug', 'info', 'warn', 'error'],
    env: 'ARGOCD_PRINCIPAL_LOG_LEVEL',
    paramsKey: 'principal.log.level',
    default: 'info',
    description: 'Log level.',
  },
  {
    flag: 'max-streams',
    type: 'int',
    min: 1,
    max: 1000,
    env: 'ARGOCD_PRINCIPAL_MAX_STREAMS',
    default: 100,
    description: 'Concurrent streams per agent.',
  },
  {
    flag: 'keep-alive-interval',
    type: 'duration',
    env: 'ARGOCD_PRINCIPAL_KEEP_ALIVE_INTERVAL',
    paramsKey: 'principal.keep-alive.interval',
    default: '30s',
    max: '1h',
    description: 'Keep-alive ping interval.',
  },
  {
    flag: 'allowed-namespaces',
    type: 'list',
    env: 'ARGOCD_PRINCIPAL_ALLOWED_NAMESPACES',
    paramsKey: 'principal.allowed-namespaces',
    description: 'Namespaces agents may manage.',
  },
  {
    flag: 'redis-url',
    type: 'url',
    schemes: ['redis', 'rediss'],
    env: 'ARGOCD_PRINCIPAL_REDIS_URL',
    description: 'Redis URL.',
  },
  {
    flag: 'server-address',
    type: 'host-port',
    defaultPort: 443,
    env: 'ARGOCD_AGENT_REMOTE_SERVER',
    paramsKey: 'agent.server.address',
    description: 'Principal address.',
  },
  {
    flag: 'tls-cert',
    type: 'file',
    env: 'ARGOCD_PRINCIPAL_TLS_SERVER_CERT_PATH',
    paramsKey: 'principal.tls.server.cert-path',
    description: 'TLS certificate.',
  },
  {
    flag: 'namespace-pattern',
    type: 'regex',
    env: 'ARGOCD_PRINCIPAL_NAMESPACE_PATTERN',
    description: 'Namespaces to watch.',
  },
]);

const dirs: string[] = [];

/** A temp dir removed after the current test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pullplane-config-'));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
