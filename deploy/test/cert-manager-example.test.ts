// docs/pki.md's cert-manager manifests make what `pullplane pki principal` makes: a Certificate
// for every kubernetes.io/tls Secret it prints, with the same common name, DNS names (the load
// balancer's aside), URI SANs and usage. pki principal itself is held to the bundles by
// install-guide.test.ts, so the example is held to them through it.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '@pullplane/app-cli';
import { describeCertificate } from '@pullplane/pki';
import { makeTempDir } from '@pullplane/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { blocksOf } from './support/doc-commands.js';
import { DEPLOY_DIR } from './support/render.js';

const ROOT = path.resolve(DEPLOY_DIR, '..');
const ADDRESS = 'argocd-agent-principal.example.com';

interface CertificateSpec {
  secretName: string;
  issuerRef: { name: string; kind: string };
  commonName: string;
  dnsNames?: string[];
  uris?: string[];
  usages: string[];
  privateKey?: { algorithm?: string; size?: number };
}
type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec: unknown;
};

const example = (): Manifest[] =>
  blocksOf(ROOT, 'docs/pki.md')
    .filter((b) => b.lang === 'yaml' && b.heading === 'With cert-manager')
    .flatMap((b) => parseAllDocuments(b.text).map((d) => d.toJS() as Manifest));

describe("docs/pki.md's cert-manager example", () => {
  let issued: Map<string, ReturnType<typeof describeCertificate>>;
  beforeAll(async () => {
    const dir = makeTempDir('pullplane-cert-manager-');
    mkdirSync(path.join(dir, 'keys'));
    const io = { out: '', err: '' };
    const run = (...argv: string[]) => runCli(argv, { out: (t) => (io.out += t), err: (t) => (io.err += t) });
    expect(await run('ca', 'init', '--dir', path.join(dir, 'pki'))).toBe(0);
    io.out = '';
    expect(
      await run(
        'pki',
        'principal',
        '--ca-dir',
        path.join(dir, 'pki'),
        '--principal-address',
        ADDRESS,
        '--keys-dir',
        path.join(dir, 'keys'),
      ),
    ).toBe(0);
    issued = new Map();
    for (const d of parseAllDocuments(io.out)) {
      const s = d.toJS() as { type: string; metadata: { name: string }; stringData: Record<string, string> };
      if (s.type === 'kubernetes.io/tls')
        issued.set(s.metadata.name, describeCertificate(s.stringData['tls.crt']!));
    }
  });

  it('is cert-manager v1: one CA Issuer, Certificates issued by it, in argocd', () => {
    const objects = example();
    const issuers = objects.filter((o) => o.kind === 'Issuer');
    expect(issuers.map((i) => [i.apiVersion, (i.spec as { ca?: unknown }).ca !== undefined])).toEqual([
      ['cert-manager.io/v1', true],
    ]);
    for (const o of objects) {
      expect([o.metadata.name, o.apiVersion, o.metadata.namespace]).toEqual([
        o.metadata.name,
        'cert-manager.io/v1',
        'argocd',
      ]);
      if (o.kind === 'Certificate')
        expect((o.spec as CertificateSpec).issuerRef).toEqual({
          name: issuers[0]!.metadata.name,
          kind: 'Issuer',
        });
    }
  });

  it('has a Certificate for every TLS Secret pki principal makes, with the same names, kind and usage', () => {
    const certs = example()
      .filter((o) => o.kind === 'Certificate')
      .map((o) => o.spec as CertificateSpec);
    expect(certs.map((c) => c.secretName).sort()).toEqual([...issued.keys()].sort());
    for (const c of certs) {
      const want = issued.get(c.secretName)!;
      const client = (want.uris ?? []).length > 0;
      expect({
        secret: c.secretName,
        cn: c.commonName,
        dns: (c.dnsNames ?? []).sort(),
        uris: c.uris ?? [],
        usage: c.usages.includes(client ? 'client auth' : 'server auth'),
        key: c.privateKey,
      }).toEqual({
        secret: c.secretName,
        cn: want.commonName,
        dns: [...want.dnsNames].sort(),
        uris: want.uris,
        usage: true,
        key: expect.objectContaining({ algorithm: 'ECDSA', size: 256 }),
      });
    }
  });
});
