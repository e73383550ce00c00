import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AGENT_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import type { NatsSecurityFlags, PresenceRecord } from '@pullplane/bus';
import { isDnsLabel } from '@pullplane/names';
import {
  type CredentialKind,
  createCertificateAuthority,
  describeCertificate,
  issueCertificate,
} from '@pullplane/pki';
import { stringify } from 'yaml';
import { agentManifests } from './agent-manifests.js';
import { UsageError } from './errors.js';
import { withBus } from './nats-connection.js';

export type OutputFormat = 'yaml' | 'json' | 'table';

function requireAgentName(name: string): void {
  if (!isDnsLabel(name))
    throw new UsageError(`"${name}" is not an agent name (a DNS label: lower-case letters, digits, "-")`);
}

/**
 * `ca init`: a new CA for client certificates (agents', callers', proxies': each carries its
 * kind) and, if wanted, the servers' certificates.
 */
export async function caInit(o: {
  dir: string;
  commonName: string;
  force?: boolean;
}): Promise<Record<string, string>> {
  const cert = path.join(o.dir, 'ca.crt');
  const key = path.join(o.dir, 'ca.key');
  if (!o.force && (existsSync(cert) || existsSync(key))) {
    throw new UsageError(
      `${o.dir} already holds a CA; pass --force to replace it (every issued certificate stops working)`,
    );
  }
  mkdirSync(o.dir, { recursive: true, mode: 0o700 });
  const ca = await createCertificateAuthority({ commonName: o.commonName, validityDays: 3650 });
  writeFileSync(cert, ca.certPem, { mode: 0o644 });
  writeFileSync(key, ca.keyPem, { mode: 0o600 });
  return { caCert: cert, caKey: key, fingerprint: describeCertificate(ca.certPem).fingerprint256 };
}

export interface AgentCreateOptions {
  name: string;
  serverAddress: string;
  serverPort: number;
  namespace: string;
  image: string;
  caDir?: string;
  tokenKeyPath?: string;
  gatewayCaPath?: string;
  validityDays: number;
  rbac?: 'minimal' | 'enhanced';
}

/** `agent create`: credentials for one agent and the manifests to apply on its cluster. */
export async function agentCreate(o: AgentCreateOptions): Promise<Array<Record<string, unknown>>> {
  requireAgentName(o.name);
  if (Boolean(o.caDir) === Boolean(o.tokenKeyPath)) {
    throw new UsageError(
      'choose one credential: --ca-dir (client certificate) or --token-key-path (bearer token)',
    );
  }
  const base = {
    agent: o.name,
    namespace: o.namespace,
    serverAddress: o.serverAddress,
    serverPort: o.serverPort,
    image: o.image,
    rbac: o.rbac ?? 'minimal',
  };
  if (o.caDir) {
    const ca = readCa(o.caDir);
    const cert = await issueCertificate(ca, {
      commonName: o.name,
      usage: 'client',
      kind: 'agent',
      validityDays: o.validityDays,
    });
    const gatewayCa = o.gatewayCaPath ? readFileSync(o.gatewayCaPath, 'utf8') : ca.certPem;
    return agentManifests({
      ...base,
      credentials: { kind: 'mtls', certPem: cert.certPem, keyPem: cert.keyPem, caPem: gatewayCa },
    });
  }
  const tokens = await TokenAuthority.fromFile(o.tokenKeyPath!, { audience: AGENT_TOKEN_AUDIENCE });
  const token = await tokens.issue(o.name);
  return agentManifests({
    ...base,
    credentials: {
      kind: 'token',
      token,
      ...(o.gatewayCaPath ? { caPem: readFileSync(o.gatewayCaPath, 'utf8') } : {}),
    },
  });
}

function readCa(caDir: string): { certPem: string; keyPem: string } {
  return {
    certPem: readFileSync(path.join(caDir, 'ca.crt'), 'utf8'),
    keyPem: readFileSync(path.join(caDir, 'ca.key'), 'utf8'),
  };
}

export interface CertCreateOptions {
  name: string;
  /** A client credential's kind, or `server`: a listener's certificate. */
  kind: CredentialKind | 'server';
  caDir: string;
  validityDays: number;
  /** DNS names of a server certificate (what clients dial and verify). */
  dns?: string[];
  /** IP addresses of a server certificate. */
  ip?: string[];
  /** Name of the kubernetes.io/tls Secret to print. */
  secretName?: string;
  namespace: string;
}

/**
 * `cert create`: a client certificate of one kind (agent, caller, proxy), or a server
 * certificate for the names clients dial, as a kubernetes.io/tls Secret, for credentials
 * `agent create` and `kubeconfig` do not issue (the proxies' certificates for the gateways'
 * internal listener, the listeners' own certificates).
 */
export async function certCreate(o: CertCreateOptions): Promise<Record<string, unknown>> {
  requireAgentName(o.name);
  const server = o.kind === 'server';
  const dns = o.dns ?? [];
  const ip = o.ip ?? [];
  if (server && dns.length === 0 && ip.length === 0)
    throw new UsageError('--kind server needs --dns (or --ip): the names clients dial and verify');
  if (!server && (dns.length > 0 || ip.length > 0))
    throw new UsageError(
      `--dns and --ip are for --kind server; a ${o.kind} certificate names its holder by its CN`,
    );
  const ca = readCa(o.caDir);
  const cert = await issueCertificate(ca, {
    commonName: o.name,
    validityDays: o.validityDays,
    ...(server
      ? { usage: 'server' as const, dnsNames: dns, ipAddresses: ip }
      : { usage: 'client' as const, kind: o.kind as CredentialKind }),
  });
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: o.secretName ?? `${o.name}-${o.kind}-tls`,
      namespace: o.namespace,
      labels: { 'app.kubernetes.io/part-of': 'pullplane', 'pullplane.io/credential-kind': o.kind },
    },
    stringData: { 'tls.crt': cert.certPem, 'tls.key': cert.keyPem, 'ca.crt': ca.certPem },
  };
}

/** `token revoke`: every service refuses the token (by its `jti`) from now on. */
export async function tokenRevoke(o: {
  jti: string;
  nats: NatsSecurityFlags;
  reason: string;
  warn?: (text: string) => void;
}): Promise<Record<string, string>> {
  if (!/^[A-Za-z0-9._:-]{1,128}$/.test(o.jti)) throw new UsageError(`"${o.jti}" is not a token id (jti)`);
  const at = new Date().toISOString();
  // The admin identity owns the revocation bucket: it creates it with the first revocation.
  await withBus(
    o.nats,
    ['revocations'],
    async (bus) => {
      await bus.revocations.add({ kind: 'token', jti: o.jti, reason: o.reason, at });
      await bus.control.publish({ type: 'token-denied', jti: o.jti });
    },
    o.warn,
  );
  return { jti: o.jti, revokedAt: at, reason: o.reason };
}

/** `agent list`: connected agents from the shared presence (any identity that may read it). */
export async function agentList(
  nats: NatsSecurityFlags,
  warn?: (text: string) => void,
): Promise<PresenceRecord[]> {
  return withBus(
    nats,
    [],
    async (bus) => (await bus.presence.list()).sort((a, b) => a.agent.localeCompare(b.agent)),
    warn,
  );
}

export function presenceTable(records: PresenceRecord[]): string {
  const rows = [['AGENT', 'GATEWAY', 'CONNECTED SINCE', 'LAST HEARTBEAT', 'VERSION']];
  for (const r of records) rows.push([r.agent, r.gatewayId, r.connectedAt, r.lastHeartbeat, r.agentVersion]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return `${rows
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i]!))
        .join('   ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

/** `agent revoke`: a durable revocation (gateways refuse and disconnect the agent) and a control event. */
export async function agentRevoke(o: {
  name: string;
  nats: NatsSecurityFlags;
  reason: string;
  warn?: (text: string) => void;
}): Promise<Record<string, string>> {
  requireAgentName(o.name);
  const at = new Date().toISOString();
  await withBus(
    o.nats,
    ['revocations'],
    async (bus) => {
      await bus.revocations.add({ kind: 'agent', agent: o.name, reason: o.reason, at });
      await bus.control.publish({ type: 'agent-revoked', agent: o.name, reason: o.reason });
    },
    o.warn,
  );
  return { agent: o.name, revokedAt: at, reason: o.reason };
}

export function render(value: unknown, format: OutputFormat): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2)}\n`;
  if (Array.isArray(value)) return value.map((v) => `---\n${stringify(v)}`).join('');
  return stringify(value);
}
