import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { issueCertificate } from '@pullplane/pki';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type OutputFormat, render } from './admin-commands.js';
import { UsageError } from './errors.js';

/**
 * The principal's listeners as the bundles (deploy/base/principal) name them: the Secret each
 * mounts its server certificate from, and the in-cluster names its clients dial.
 */
const SERVERS = [
  {
    secret: 'argocd-agent-principal-tls',
    cn: 'argocd-agent-principal',
    dns: ['argocd-agent-principal-internal'],
  },
  {
    secret: 'argocd-agent-resource-proxy-tls',
    cn: 'argocd-agent-resource-proxy',
    dns: ['argocd-agent-resource-proxy'],
  },
  { secret: 'argocd-redis-proxy-tls', cn: 'argocd-agent-redis-proxy', dns: ['argocd-agent-redis-proxy'] },
  {
    secret: 'argocd-agent-extension-proxy-tls',
    cn: 'argocd-agent-extension-proxy',
    dns: ['argocd-agent-extension-proxy'],
  },
] as const;
/** The proxies' identities on the gateways' internal listener (principal.internal.allowed-clients). */
const PROXIES = ['argocd-agent-resource-proxy', 'argocd-agent-redis-proxy', 'argocd-agent-extension-proxy'];
/** Private token keys kept by the operator, next to the Secrets that carry them (or their public half). */
const KEYS = { jwt: 'jwt.key', extension: 'extension-token.key' } as const;

export interface PkiPrincipalOptions {
  caDir: string;
  /** What agents dial: the gateway load balancer's DNS names. */
  principalAddress: string[];
  /** Extra names for the resource proxy (a Route's host, an ingress for kubectl from outside). */
  resourceProxyDns: string[];
  keysDir: string;
  namespace: string;
  validityDays: number;
  force?: boolean;
}

const labels = { 'app.kubernetes.io/part-of': 'pullplane' };
const secret = (name: string, namespace: string, data: Record<string, string>, type = 'Opaque') => ({
  apiVersion: 'v1',
  kind: 'Secret',
  type,
  metadata: { name, namespace, labels },
  stringData: data,
});

/**
 * `pki principal`: every certificate and key the principal bundle mounts, as the Secrets it mounts
 * them from, issued by the CA of `ca init`: the CA certificate (never its key), the four
 * listeners' server certificates, the three proxies' client certificates, and the two token keys
 * (the cluster-Secret signing key; the extension proxy's public key). The private token keys are
 * written to `keysDir` (mode 0600): `agent kubeconfig` and `extensions token` sign with them.
 */
export async function pkiPrincipal(o: PkiPrincipalOptions): Promise<Array<Record<string, unknown>>> {
  if (o.principalAddress.length === 0)
    throw new UsageError('--principal-address: the name agents dial (the gateway load balancer)');
  const keyFiles = Object.values(KEYS).map((f) => path.join(o.keysDir, f));
  if (!o.force && keyFiles.some((f) => existsSync(f)))
    throw new UsageError(
      `${o.keysDir} already holds ${Object.values(KEYS).join(' or ')}; pass --force to replace them (tokens signed with the old keys stop working)`,
    );
  const ca = {
    certPem: readFileSync(path.join(o.caDir, 'ca.crt'), 'utf8'),
    keyPem: readFileSync(path.join(o.caDir, 'ca.key'), 'utf8'),
  };
  const out: Array<Record<string, unknown>> = [
    secret('argocd-agent-ca', o.namespace, { 'ca.crt': ca.certPem }),
  ];
  for (const s of SERVERS) {
    const dnsNames = [
      ...(s.secret === 'argocd-agent-principal-tls' ? o.principalAddress : []),
      ...(s.secret === 'argocd-agent-resource-proxy-tls' ? o.resourceProxyDns : []),
      ...s.dns,
    ];
    const cert = await issueCertificate(ca, {
      commonName: s.cn,
      usage: 'server',
      dnsNames: [...new Set(dnsNames)],
      validityDays: o.validityDays,
    });
    out.push(
      secret(
        s.secret,
        o.namespace,
        { 'tls.crt': cert.certPem, 'tls.key': cert.keyPem, 'ca.crt': ca.certPem },
        'kubernetes.io/tls',
      ),
    );
  }
  for (const p of PROXIES) {
    const cert = await issueCertificate(ca, {
      commonName: p,
      usage: 'client',
      kind: 'proxy',
      validityDays: o.validityDays,
    });
    out.push(
      secret(
        `${p}-client-tls`,
        o.namespace,
        { 'tls.crt': cert.certPem, 'tls.key': cert.keyPem, 'ca.crt': ca.certPem },
        'kubernetes.io/tls',
      ),
    );
  }
  mkdirSync(o.keysDir, { recursive: true, mode: 0o700 });
  const jwt = await TokenAuthority.generate();
  writeFileSync(path.join(o.keysDir, KEYS.jwt), jwt.exportPrivateKeyPem(), { mode: 0o600 });
  out.push(secret('argocd-agent-jwt', o.namespace, { 'jwt.key': jwt.exportPrivateKeyPem() }));
  const extension = await TokenAuthority.generate();
  writeFileSync(path.join(o.keysDir, KEYS.extension), extension.exportPrivateKeyPem(), { mode: 0o600 });
  out.push(
    secret('argocd-agent-extension-proxy-token', o.namespace, {
      'token.pub': extension.exportPublicKeyPem(),
    }),
  );
  return out;
}

const collect = (v: string, prev: string[]) => [...prev, ...v.split(',').filter(Boolean)];
const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive whole number');
  return n;
};

/** `pullplane pki …`: the principal's certificates and keys in one go. */
export function addPkiCommands(program: Command, out: (text: string) => void, err: (text: string) => void) {
  program
    .command('pki')
    .description('Every certificate and key an installation needs, as the Secrets the bundles mount.')
    .command('principal')
    .description(
      "The principal's Secrets: argocd-agent-ca (certificate only), the four listeners' server certificates, the three proxies' client certificates, argocd-agent-jwt and the extension proxy's token key. Private token keys go to --keys-dir.",
    )
    .requiredOption('--ca-dir <dir>', 'CA from `ca init`')
    .option(
      '--principal-address <names>',
      'DNS names agents dial: the argocd-agent-principal load balancer (repeatable, or comma-separated)',
      collect,
      [],
    )
    .option(
      '--resource-proxy-dns <names>',
      'more DNS names for the resource proxy: a Route or ingress host for kubectl from outside',
      collect,
      [],
    )
    .option('--keys-dir <dir>', `where ${Object.values(KEYS).join(' and ')} are written (mode 0600)`, '.')
    .option('--namespace <ns>', 'namespace of the Secrets', 'argocd')
    .option('--validity-days <days>', 'certificate lifetime', positiveInt, 365)
    .option('--force', 'replace existing token keys')
    .addOption(
      new Option('--output <format>', 'output format: yaml, json').choices(['yaml', 'json']).default('yaml'),
    )
    .action(async (o: PkiPrincipalOptions & { output: OutputFormat }) => {
      out(render(await pkiPrincipal(o), o.output));
      err(
        `wrote ${path.join(o.keysDir, KEYS.jwt)} (signs cluster-Secret and caller tokens: pullplane agent kubeconfig --token-key-path) and ${path.join(o.keysDir, KEYS.extension)} (pullplane extensions token --token-key-path); the NATS identities: pullplane nats nkeys\n`,
      );
    });
}
