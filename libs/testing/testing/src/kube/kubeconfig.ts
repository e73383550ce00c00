import { stringify } from 'yaml';

export interface KubeconfigOptions {
  /** API server URL (defaults to the fake server's). */
  server?: string | undefined;
  /** Bearer token for the user entry. */
  token?: string | undefined;
  /** PEM client certificate and key for the user entry. */
  clientCert?: string | undefined;
  clientKey?: string | undefined;
  /** PEM CA bundle that signed the server certificate. */
  caCert?: string | undefined;
  insecureSkipTlsVerify?: boolean | undefined;
  /** Default namespace of the context. */
  namespace?: string | undefined;
  /** Context/cluster/user name (default "fake"). */
  name?: string | undefined;
}

const b64 = (pem: string) => Buffer.from(pem).toString('base64');

/** A single-context kubeconfig as YAML, usable by kubectl and @kubernetes/client-node. */
export function buildKubeconfig(opts: KubeconfigOptions & { server: string }): string {
  const name = opts.name ?? 'fake';
  const cluster: Record<string, unknown> = { server: opts.server };
  if (opts.caCert) cluster['certificate-authority-data'] = b64(opts.caCert);
  // @kubernetes/client-node 1.x refuses plain http:// servers unless this flag is set;
  // kubectl ignores it for http, so it is always set for http URLs.
  if (opts.insecureSkipTlsVerify ?? opts.server.startsWith('http://'))
    cluster['insecure-skip-tls-verify'] = true;
  const user: Record<string, unknown> = {};
  if (opts.token) user.token = opts.token;
  if (opts.clientCert) user['client-certificate-data'] = b64(opts.clientCert);
  if (opts.clientKey) user['client-key-data'] = b64(opts.clientKey);
  const context: Record<string, unknown> = { cluster: name, user: name };
  if (opts.namespace) context.namespace = opts.namespace;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context }],
    'current-context': name,
    preferences: {},
  });
}
