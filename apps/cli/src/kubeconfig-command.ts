import { readFileSync, writeFileSync } from 'node:fs';
import { CALLER_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import type { NatsSecurityFlags } from '@pullplane/bus';
import { isDnsLabel } from '@pullplane/names';
import { issueCertificate } from '@pullplane/pki';
import { agentServerUrl, type KubeconfigEntry, renderKubeconfig } from '@pullplane/resource-proxy';
import { UsageError } from './errors.js';
import { withBus } from './nats-connection.js';

export interface KubeconfigCommandOptions {
  server: string;
  agents: string[];
  all?: boolean;
  /** Presence for --all. */
  nats?: NatsSecurityFlags;
  warn?: (text: string) => void;
  /** Trust for the proxy's server certificate. */
  caPath?: string;
  insecureSkipTlsVerify?: boolean;
  /** Token mode: the ES256 key the resource proxy verifies caller tokens with. */
  tokenKeyPath?: string;
  tokenTtl?: number;
  subject?: string;
  /** Certificate mode: the CA the proxy trusts for caller certificates (CN = agent). */
  clientCaCertPath?: string;
  clientCaKeyPath?: string;
  output?: string;
}

/** Builds a kubeconfig with one context per agent, each reaching it through the resource proxy. */
export async function buildKubeconfig(o: KubeconfigCommandOptions): Promise<string> {
  let agents = [...o.agents];
  if (o.all) {
    if (!o.nats?.natsUrl) throw new UsageError('--all needs --nats-url to read which agents are connected');
    const records = await withBus(o.nats, [], (bus) => bus.presence.list(), o.warn);
    agents.push(...records.map((r) => r.agent));
  }
  agents = [...new Set(agents)].sort();
  if (agents.length === 0) throw new UsageError('name at least one agent (--agent) or use --all');
  for (const a of agents)
    if (!isDnsLabel(a)) throw new UsageError(`"${a}" is not an agent name (a DNS label)`);
  const tokenMode = Boolean(o.tokenKeyPath);
  const certMode = Boolean(o.clientCaCertPath || o.clientCaKeyPath);
  if (tokenMode === certMode) {
    throw new UsageError(
      'choose one credential: --token-key-path (bearer tokens) or --client-ca-cert + --client-ca-key (certificates)',
    );
  }
  if (certMode && !(o.clientCaCertPath && o.clientCaKeyPath))
    throw new UsageError('--client-ca-cert and --client-ca-key go together');
  const caPem = o.caPath ? readFileSync(o.caPath, 'utf8') : undefined;
  const authority = tokenMode
    ? await TokenAuthority.fromFile(o.tokenKeyPath!, { audience: CALLER_TOKEN_AUDIENCE })
    : undefined;
  const ca = certMode
    ? { certPem: readFileSync(o.clientCaCertPath!, 'utf8'), keyPem: readFileSync(o.clientCaKeyPath!, 'utf8') }
    : undefined;
  const entries: KubeconfigEntry[] = [];
  for (const agent of agents) {
    const base = {
      name: agent,
      server: agentServerUrl(o.server, agent),
      ...(caPem ? { caPem } : {}),
      ...(o.insecureSkipTlsVerify ? { insecureSkipTlsVerify: true } : {}),
    };
    if (authority) {
      // One agent per token: kubectl's --raw drops the /clusters/<agent> prefix, and a
      // single-agent credential still tells the proxy which cluster is meant.
      const token = await authority.issue(o.subject ?? 'kubectl', {
        agents: [agent],
        ...(o.tokenTtl ? { ttlSeconds: o.tokenTtl } : {}),
      });
      entries.push({ ...base, token });
    } else {
      // A caller certificate: it reaches this agent's cluster, and never opens its tunnel.
      const cert = await issueCertificate(ca!, {
        commonName: agent,
        usage: 'client',
        kind: 'caller',
        validityDays: 90,
      });
      entries.push({ ...base, clientCertPem: cert.certPem, clientKeyPem: cert.keyPem });
    }
  }
  const text = renderKubeconfig(entries);
  if (o.output) writeFileSync(o.output, text, { mode: 0o600 });
  return text;
}
