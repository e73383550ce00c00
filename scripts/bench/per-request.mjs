// npm run bench:per-request — what a request used to pay that is now paid per connection, per
// token or per process, measured side by side in one run on the built code: the resource
// proxy's caller certificate parse (per request before, once per TLS connection now), a bearer
// token's signature check (per request before, once per token now), the agent's cluster
// request options (client-node's applyToHTTPSOptions per request before, prepared every 10 s
// now), and the stream gateway's idle RSS (a real process, registration off).
// Not a test: it prints markdown tables to paste into the READMEs.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { CachedTokenVerifier, identityFromPeerCertificate, TokenAuthority } from '@pullplane/auth';
import { createCertificateAuthority, issueCertificate } from '@pullplane/pki';
import { freePort, startNatsServer } from '@pullplane/testing';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? (process.env.BENCH_QUICK === '1' ? 200 : 1000));

/** Microseconds per call of `fn` (sync or async), over RUN_MS after a short warm-up. */
async function perCall(fn) {
  const until = (ms) => performance.now() + ms;
  for (let end = until(RUN_MS / 5); performance.now() < end; ) await fn();
  let n = 0;
  const start = performance.now();
  for (let end = until(RUN_MS); performance.now() < end; n++) await fn();
  return ((performance.now() - start) * 1000) / n;
}
const us = (v) => `${v < 10 ? v.toFixed(2) : v.toFixed(1)} µs`;
const row = (cells) => console.log(`| ${cells.join(' | ')} |`);

const dir = mkdtempSync(path.join(tmpdir(), 'bench-per-request-'));
const file = (name, body) => {
  const p = path.join(dir, name);
  writeFileSync(p, body);
  return p;
};
const ca = await createCertificateAuthority({ commonName: 'bench-ca' });
const server = await issueCertificate(ca, {
  commonName: 'server',
  dnsNames: ['localhost'],
  ipAddresses: ['127.0.0.1'],
  usage: 'both',
});
const caller = await issueCertificate(ca, { commonName: 'agent-a', usage: 'client', kind: 'caller' });

console.log(
  `per-request costs, ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} × ${os.cpus()[0]?.model}, node ${process.version}\n`,
);
row(['work', 'per request before', 'now', 'paid now']);
row(['---', '---', '---', '---']);

// ---- caller certificate: a real TLS connection with a client certificate --------------------
const serverSocket = await new Promise((resolve, reject) => {
  const srv = tls.createServer(
    {
      cert: server.certPem,
      key: server.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (s) => resolve(Object.assign(s, { srv })),
  );
  srv.listen(0, '127.0.0.1', () => {
    const c = tls.connect({
      port: srv.address().port,
      host: '127.0.0.1',
      servername: 'localhost',
      ca: ca.certPem,
      cert: caller.certPem,
      key: caller.keyPem,
    });
    c.on('error', reject);
  });
});
const CN = { kind: 'mtls', match: 'common-name', spec: 'mtls' };
const kinds = { expect: 'caller' };
const parse = () => identityFromPeerCertificate(CN, serverSocket.getPeerCertificate(), kinds);
if (!parse().ok) throw new Error('the caller certificate should identify agent-a');
const perSocket = new WeakMap([[serverSocket, parse()]]);
row([
  'caller certificate (getPeerCertificate + parse)',
  us(await perCall(parse)),
  us(await perCall(() => perSocket.get(serverSocket))),
  'once per TLS connection',
]);
serverSocket.destroy();
serverSocket.srv.close();

// ---- bearer token --------------------------------------------------------------------------
const authority = await TokenAuthority.generate({ audience: 'resource-proxy' });
const token = await authority.issue('argocd-server', { agents: ['agent-a'], ttlSeconds: 3600 });
const cache = new CachedTokenVerifier(authority);
row([
  'bearer token (ES256 signature, claims)',
  us(await perCall(() => authority.verify(token))),
  us(await perCall(() => cache.verify(token))),
  'once per token until exp',
]);

// ---- the agent's cluster request options ---------------------------------------------------
const kc = new KubeConfig();
kc.loadFromString(
  `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: "${file('ca.crt', ca.certPem)}"}}]\nusers: [{name: u, user: {client-certificate: "${file('u.crt', caller.certPem)}", client-key: "${file('u.key', caller.keyPem)}"}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
);
const prepared = { headers: { authorization: 'Bearer x' }, agent: new https.Agent({ keepAlive: true }) };
row([
  "agent's cluster options (applyToHTTPSOptions: 3 files read, new https.Agent)",
  us(
    await perCall(async () => {
      const o = { headers: {} };
      await kc.applyToHTTPSOptions(o);
      o.agent.destroy();
    }),
  ),
  us(
    await perCall(() => ({
      headers: { accept: 'application/json', ...prepared.headers },
      agent: prepared.agent,
    })),
  ),
  'every 10 s and after a 401',
]);
prepared.agent.destroy();

// ---- gateway idle RSS ------------------------------------------------------------------------
const nats = await startNatsServer();
const gw = spawn(
  process.execPath,
  [
    path.join(root, 'apps', 'stream-gateway', 'dist', 'main.js'),
    '--listen-host=127.0.0.1',
    `--listen-port=${await freePort()}`,
    `--internal-listen-port=${await freePort()}`,
    '--advertise-address=127.0.0.1',
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
    '--insecure-plaintext',
    '--auth=header:x-agent-id:^([a-z0-9-]+)$',
    '--internal-auth=header:x-caller:^([a-z0-9-]+)$',
    '--internal-allowed-clients=bench-proxy',
  ],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
await new Promise((resolve, reject) => {
  let out = '';
  const on = (d) => {
    out += d;
    if (out.includes('stream gateway started')) resolve();
  };
  gw.stdout.on('data', on);
  gw.stderr.on('data', on);
  gw.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${out}`)));
});
await new Promise((r) => setTimeout(r, 2000));
const status = readFileSync(`/proc/${gw.pid}/status`, 'utf8');
const kb = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
console.log(
  `\nstream gateway, idle, registration off: VmRSS ${(kb('VmRSS') / 1024).toFixed(1)} MiB, VmHWM ${(kb('VmHWM') / 1024).toFixed(1)} MiB`,
);
gw.kill('SIGTERM');
await new Promise((r) => gw.once('exit', r));
await nats.stop();
rmSync(dir, { recursive: true, force: true });
