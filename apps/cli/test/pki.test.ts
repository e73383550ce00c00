// `pullplane pki principal`: the principal's certificates and token keys as the Secrets the
// bundle mounts. deploy/test/install-guide.test.ts runs it as the install guide does and checks
// the result against the rendered bundles; here: what it refuses, what it keeps off the cluster,
// and that each certificate is what its Secret is for.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { describeCertificate } from '@pullplane/pki';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../src/program.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cli-pki-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

type Secret = { type: string; metadata: { name: string }; stringData: Record<string, string> };

describe('pullplane pki principal', () => {
  let secrets: Map<string, Secret>;
  let ca: X509Certificate;
  const keys = () => path.join(dir, 'keys');

  beforeAll(async () => {
    expect((await cli('ca', 'init', '--dir', path.join(dir, 'pki'))).code).toBe(0);
    ca = new X509Certificate(readFileSync(path.join(dir, 'pki', 'ca.crt')));
    const r = await cli(
      'pki',
      'principal',
      '--ca-dir',
      path.join(dir, 'pki'),
      '--principal-address',
      'pp.example.com',
      '--resource-proxy-dns',
      'rp.example.com',
      '--keys-dir',
      keys(),
    );
    expect(r.code).toBe(0);
    secrets = new Map(
      parseAllDocuments(r.out).map((d) => {
        const s = d.toJS() as Secret;
        return [s.metadata.name, s];
      }),
    );
  });

  it('prints the CA certificate and never its key', () => {
    const s = secrets.get('argocd-agent-ca')!;
    expect(Object.keys(s.stringData)).toEqual(['ca.crt']);
    const all = [...secrets.values()].flatMap((x) => Object.values(x.stringData)).join('\n');
    expect(all).not.toContain(readFileSync(path.join(dir, 'pki', 'ca.key'), 'utf8').trim());
  });

  it('gives each listener a server certificate for the names its clients dial, signed by the CA', () => {
    const names = (secret: string) => {
      const pem = secrets.get(secret)!.stringData['tls.crt']!;
      expect(new X509Certificate(pem).verify(ca.publicKey)).toBe(true);
      const d = describeCertificate(pem);
      expect(d.uris).toEqual([]);
      return d.dnsNames;
    };
    expect(names('argocd-agent-principal-tls').sort()).toEqual([
      'argocd-agent-principal-internal',
      'pp.example.com',
    ]);
    expect(names('argocd-agent-resource-proxy-tls').sort()).toEqual([
      'argocd-agent-resource-proxy',
      'rp.example.com',
    ]);
    expect(names('argocd-redis-proxy-tls')).toEqual(['argocd-agent-redis-proxy']);
    expect(names('argocd-agent-extension-proxy-tls')).toEqual(['argocd-agent-extension-proxy']);
  });

  it('gives each proxy a proxy-kind client certificate named as the internal allow-list names it', () => {
    for (const p of ['resource-proxy', 'redis-proxy', 'extension-proxy']) {
      const d = describeCertificate(secrets.get(`argocd-agent-${p}-client-tls`)!.stringData['tls.crt']!);
      expect([d.commonName, d.uris]).toEqual([
        `argocd-agent-${p}`,
        [`spiffe://pullplane/proxy/argocd-agent-${p}`],
      ]);
    }
  });

  it('keeps the private token keys on disk (0600) and puts only the public half of the extension key in its Secret', async () => {
    const jwtFile = path.join(keys(), 'jwt.key');
    const extFile = path.join(keys(), 'extension-token.key');
    expect(statSync(jwtFile).mode & 0o777).toBe(0o600);
    expect(statSync(extFile).mode & 0o777).toBe(0o600);
    expect(secrets.get('argocd-agent-jwt')!.stringData['jwt.key']).toBe(readFileSync(jwtFile, 'utf8'));
    const pub = secrets.get('argocd-agent-extension-proxy-token')!.stringData['token.pub']!;
    expect(pub).toContain('BEGIN PUBLIC KEY');
    const signer = await TokenAuthority.fromFile(extFile, { audience: 'extension-proxy' });
    const verifier = await TokenAuthority.fromPem(pub, { audience: 'extension-proxy' });
    expect(await verifier.verify(await signer.issue('argocd-server'))).toMatchObject({
      agent: 'argocd-server',
    });
  });

  it('refuses to replace token keys without --force, and to run without the address agents dial', async () => {
    const again = await cli(
      'pki',
      'principal',
      '--ca-dir',
      path.join(dir, 'pki'),
      '--principal-address',
      'x',
      '--keys-dir',
      keys(),
    );
    expect([again.code, again.err]).toEqual([2, expect.stringContaining('--force')]);
    const noAddress = await cli(
      'pki',
      'principal',
      '--ca-dir',
      path.join(dir, 'pki'),
      '--keys-dir',
      path.join(dir, 'k2'),
    );
    expect([noAddress.code, noAddress.err]).toEqual([2, expect.stringContaining('--principal-address')]);
  });
});
