import { writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import {
  type CertificateAndKey,
  type CertificateAuthority,
  type CredentialKind,
  createCertificateAuthority,
  issueCertificate,
} from '@pullplane/pki';
import { makeTempDir } from '../launchers/processes.js';

export interface ForeignCa {
  ca: CertificateAuthority;
  /** A client certificate signed by the foreign CA: must be refused by anything trusting only the test CA. */
  client: CertificateAndKey;
}

export interface TestPkiFiles {
  dir: string;
  caCert: string;
  caKey: string;
  /** `<name>.crt` / `<name>.key` for each extra certificate written. */
  files: Record<string, { cert: string; key: string }>;
}

export interface TestPki {
  /** The trusted test CA (PEM certificate and key). */
  readonly ca: CertificateAuthority;
  /** Server certificate for the given DNS names / IP addresses (default localhost + 127.0.0.1). */
  serverCert(hosts?: string[]): Promise<CertificateAndKey>;
  /**
   * Client certificate with the given CN and no credential kind (what other tooling, e.g.
   * argocd-agent's, issues), optionally with URI SANs (SPIFFE IDs) or a kind marker.
   */
  clientCert(cn: string, opts?: { uris?: string[]; kind?: CredentialKind }): Promise<CertificateAndKey>;
  /** An agent's certificate (CN and `spiffe://pullplane/agent/<name>`): opens its tunnel. */
  agentCert(name: string): Promise<CertificateAndKey>;
  /** A caller's certificate for one agent's cluster through the resource proxy. */
  callerCert(agent: string): Promise<CertificateAndKey>;
  /** A proxy replica's certificate for the gateway's internal listener. */
  proxyCert(name: string): Promise<CertificateAndKey>;
  /** A client certificate that expired yesterday, signed by the trusted CA. */
  expiredClientCert(cn: string): Promise<CertificateAndKey>;
  /** A second, unrelated CA plus a client certificate it signed. */
  foreignCa(cn?: string): Promise<ForeignCa>;
  /** Writes ca.crt/ca.key (and `<name>.crt/.key` for `extra`) for tools that want files; dir defaults to a temp dir. */
  writeToDir(dir?: string, extra?: Record<string, CertificateAndKey>): Promise<TestPkiFiles>;
}

const DAY = 24 * 60 * 60 * 1000;

function splitHosts(hosts: string[]): { dnsNames: string[]; ipAddresses: string[] } {
  return {
    dnsNames: hosts.filter((h) => isIP(h) === 0),
    ipAddresses: hosts.filter((h) => isIP(h) !== 0),
  };
}

/** A throwaway PKI for tests, built on @pullplane/pki so tests exercise the production issuer. */
export async function createTestPki(commonName = 'pullplane-test-ca'): Promise<TestPki> {
  const ca = await createCertificateAuthority({ commonName });
  return {
    ca,
    serverCert(hosts = ['localhost', '127.0.0.1']) {
      return issueCertificate(ca, {
        commonName: hosts[0] ?? 'localhost',
        usage: 'server',
        ...splitHosts(hosts),
      });
    },
    clientCert(cn, opts = {}) {
      return issueCertificate(ca, {
        commonName: cn,
        usage: 'client',
        ...(opts.uris ? { uris: opts.uris } : {}),
        ...(opts.kind ? { kind: opts.kind } : {}),
      });
    },
    agentCert: (name) => issueCertificate(ca, { commonName: name, usage: 'client', kind: 'agent' }),
    callerCert: (agent) => issueCertificate(ca, { commonName: agent, usage: 'client', kind: 'caller' }),
    proxyCert: (name) => issueCertificate(ca, { commonName: name, usage: 'client', kind: 'proxy' }),
    expiredClientCert(cn) {
      const now = Date.now();
      return issueCertificate(ca, {
        commonName: cn,
        usage: 'client',
        notBefore: new Date(now - 2 * DAY),
        notAfter: new Date(now - DAY),
      });
    },
    async foreignCa(cn = 'intruder') {
      const foreign = await createCertificateAuthority({ commonName: 'unrelated-ca' });
      return { ca: foreign, client: await issueCertificate(foreign, { commonName: cn, usage: 'client' }) };
    },
    async writeToDir(dir = makeTempDir('test-pki-'), extra = {}) {
      const caCert = join(dir, 'ca.crt');
      const caKey = join(dir, 'ca.key');
      await writeFile(caCert, ca.certPem);
      await writeFile(caKey, ca.keyPem, { mode: 0o600 });
      const files: TestPkiFiles['files'] = {};
      for (const [name, pair] of Object.entries(extra)) {
        const cert = join(dir, `${name}.crt`);
        const key = join(dir, `${name}.key`);
        await writeFile(cert, pair.certPem);
        await writeFile(key, pair.keyPem, { mode: 0o600 });
        files[name] = { cert, key };
      }
      return { dir, caCert, caKey, files };
    },
  };
}
