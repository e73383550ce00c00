import { stringify } from 'yaml';

export interface KubeconfigEntry {
  /** Context and cluster name; usually the agent name. */
  name: string;
  /** Resource proxy URL addressing the agent (e.g. https://proxy:9090/clusters/agent-a). */
  server: string;
  caPem?: string;
  insecureSkipTlsVerify?: boolean;
  clientCertPem?: string;
  clientKeyPem?: string;
  token?: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A kubeconfig with one context per entry; the first entry is the current context. */
export function renderKubeconfig(entries: readonly KubeconfigEntry[]): string {
  if (entries.length === 0) throw new Error('a kubeconfig needs at least one cluster');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: entries.map((e) => ({
      name: e.name,
      cluster: {
        server: e.server,
        ...(e.caPem ? { 'certificate-authority-data': b64(e.caPem) } : {}),
        ...(e.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
      },
    })),
    users: entries.map((e) => ({
      name: e.name,
      user: {
        ...(e.clientCertPem ? { 'client-certificate-data': b64(e.clientCertPem) } : {}),
        ...(e.clientKeyPem ? { 'client-key-data': b64(e.clientKeyPem) } : {}),
        ...(e.token ? { token: e.token } : {}),
      },
    })),
    contexts: entries.map((e) => ({ name: e.name, context: { cluster: e.name, user: e.name } })),
    'current-context': entries[0]!.name,
  });
}

/** The URL that addresses one agent through a resource proxy at `base`. */
export function agentServerUrl(base: string, agent: string): string {
  return `${base.replace(/\/$/, '')}/clusters/${agent}`;
}
