// npm run bench:tunnel — round trips through proxy-side client + gateway + agent, side by side
// with the same local HTTP backend called directly, and over TLS (one TLS hop next to the
// tunnel's two), in one run; each body size row has its own peak RSS per process (reset through
// /proc/<pid>/clear_refs before it). Not a test: it prints figures.
//
// Processes: this one (backend, direct client, proxy-side router), a gateway and an agent
// (the real apps, spawned from dist/), nats-server; for idle agents a simulator process.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { connectNatsBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { AgentRouter } from '@pullplane/router';
import { freePort, startNatsServer } from '@pullplane/testing';
import pino from 'pino';
import { Pool } from 'undici';
import { benchPki, children, cpuTicks, root, statusKb as rssKb, spawnApp } from './processes.mjs';

const quick = process.env.BENCH_QUICK === '1';
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? (quick ? 1000 : 5000));
const IDLE_SIZES = (process.env.BENCH_IDLE_AGENTS ?? (quick ? '200' : '1000,5000,10000'))
  .split(',')
  .map(Number);
const IDLE_WINDOW_MS = Number(process.env.BENCH_IDLE_WINDOW_MS ?? (quick ? 3000 : 30000));
const BODY_SIZES_MIB = (process.env.BENCH_BODY_MIB ?? (quick ? '1,10' : '1,10,100')).split(',').map(Number);
const log = pino({ level: 'silent' });
/** How long a freshly started gateway is left alone before its idle RSS is read. */
const IDLE_SETTLE_MS = 2000;
/** The idle RSS the gateway should stay under (issue: data path costs). */
const GATEWAY_IDLE_RSS_TARGET_MIB = 80;

const mib = (kb) => `${(kb / 1024).toFixed(1)} MiB`;

// ---- fixtures --------------------------------------------------------------------------
const { file, ca, server, agentCert, proxyCert, caFile, tlsCrt, tlsKey } = await benchPki(
  'bench-tunnel-',
  'resource-proxy',
);

const small = Buffer.from(
  JSON.stringify({ kind: 'Pod', apiVersion: 'v1', metadata: { name: 'bench', namespace: 'default' } }),
);
const serveBench = (req, res) => {
  const m = /^\/bytes\/(\d+)/.exec(req.url ?? '');
  if (m) {
    let left = Number(m[1]);
    const chunk = Buffer.alloc(64 * 1024, 97);
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
          return void res.once('drain', pump);
      }
      res.end();
    };
    return pump();
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': small.length });
  res.end(small);
};
const backend = http.createServer(serveBench);
// The same backend over TLS: what one TLS hop costs, next to the tunnel's two.
const tlsBackend = https.createServer({ cert: server.certPem, key: server.keyPem }, serveBench);
await new Promise((r) => tlsBackend.listen(0, '127.0.0.1', r));
await new Promise((r) => backend.listen(0, '127.0.0.1', r));
const backendUrl = `http://127.0.0.1:${backend.address().port}`;
const kubeconfig = file(
  'kubeconfig',
  `apiVersion: v1\nkind: Config\nclusters: [{name: b, cluster: {server: "${backendUrl}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: bench}}]\ncontexts: [{name: b, context: {cluster: b, user: u}}]\ncurrent-context: b\n`,
);

const nats = await startNatsServer();
const gwPort = await freePort();
const gwInternal = await freePort();
const gwArgs = (port, internal, extra = []) => [
  '--listen-host=127.0.0.1',
  `--listen-port=${port}`,
  `--internal-listen-port=${internal}`,
  '--advertise-address=127.0.0.1',
  `--nats-url=${nats.url}`,
  '--nats-insecure',
  '--metrics-port=0',
  '--healthz-port=0',
  ...extra,
];
const gateway = await spawnApp(
  'stream-gateway',
  gwArgs(gwPort, gwInternal, [`--tls-cert=${tlsCrt}`, `--tls-key=${tlsKey}`, `--root-ca-path=${caFile}`]),
  'stream gateway started',
);
// Idle RSS: the gateway as deployed (mTLS, both listeners, NATS), started, no agent yet.
await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
const gatewayIdleKb = rssKb(gateway.pid);
const agent = await spawnApp(
  'agent',
  [
    '--server-address=127.0.0.1',
    `--server-port=${gwPort}`,
    '--creds=mtls:',
    `--tls-client-cert=${file('agent.crt', agentCert.certPem)}`,
    `--tls-client-key=${file('agent.key', agentCert.keyPem)}`,
    `--root-ca-path=${caFile}`,
    `--kubeconfig=${kubeconfig}`,
    // The transport is measured here; the managed-resource rule has its own tests.
    '--resource-proxy-filter=none',
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  'tunnel established',
);

const bus = await connectNatsBus({ servers: nats.url, name: 'bench-router' });
const router = new AgentRouter({
  bus,
  logger: log,
  credentials: tunnelCredentials.tls(
    Buffer.from(ca.certPem),
    Buffer.from(proxyCert.keyPem),
    Buffer.from(proxyCert.certPem),
  ),
});
await router.start();
while (!router.lookup('bench-agent')) await new Promise((r) => setTimeout(r, 20));

// ---- clients ---------------------------------------------------------------------------
const pool = new Pool(backendUrl, { connections: 128, pipelining: 1 });
const tlsPool = new Pool(`https://127.0.0.1:${tlsBackend.address().port}`, {
  connections: 128,
  pipelining: 1,
  connect: { ca: ca.certPem, servername: 'localhost' },
});
async function directTls(p) {
  const res = await tlsPool.request({ path: p, method: 'GET' });
  let n = 0;
  for await (const c of res.body) n += c.length;
  return n;
}
async function direct(p) {
  const res = await pool.request({ path: p, method: 'GET' });
  let n = 0;
  for await (const c of res.body) n += c.length;
  return n;
}
async function tunnelled(p) {
  const s = router.open('bench-agent', {
    head: { case: 'http', value: { method: 'GET', path: p, headers: [] } },
  });
  await s.responseHead();
  let n = 0;
  await new Promise((resolve, reject) => {
    s.on('data', (c) => {
      n += c.length;
    });
    s.on('end', resolve);
    s.on('error', reject);
  });
  return n;
}

async function load(fn, concurrency, ms) {
  const lat = [];
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const t = process.hrtime.bigint();
        await fn('/api/v1/namespaces/default/pods/bench');
        lat.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  const q = (x) => lat[Math.min(lat.length - 1, Math.floor(lat.length * x))];
  return { p50: q(0.5), p99: q(0.99), rps: lat.length / (ms / 1000) };
}

const rows = [];
const fmt = (x, d = 2) => x.toFixed(d);
const idleMib = gatewayIdleKb / 1024;
console.log(
  `\nGateway idle RSS (mTLS, both listeners, NATS; ${IDLE_SETTLE_MS / 1000} s after start, no agent): ` +
    `${idleMib.toFixed(1)} MiB; target <= ${GATEWAY_IDLE_RSS_TARGET_MIB} MiB` +
    (idleMib > GATEWAY_IDLE_RSS_TARGET_MIB
      ? ` (missed by ${(idleMib - GATEWAY_IDLE_RSS_TARGET_MIB).toFixed(1)} MiB)`
      : ' (met)'),
);
console.log(`\nLatency and throughput (small GET, ${DURATION_MS} ms per cell)`);
for (const c of [1, 16, 64]) {
  await load(direct, c, 300);
  await load(directTls, c, 300);
  await load(tunnelled, c, 300);
  const d = await load(direct, c, DURATION_MS);
  const dt = await load(directTls, c, DURATION_MS);
  const t = await load(tunnelled, c, DURATION_MS);
  rows.push({
    concurrency: c,
    'direct p50 ms': fmt(d.p50, 3),
    'direct TLS p50 ms': fmt(dt.p50, 3),
    'tunnel p50 ms': fmt(t.p50, 3),
    'added p50 ms': fmt(t.p50 - d.p50, 3),
    'direct p99 ms': fmt(d.p99, 3),
    'tunnel p99 ms': fmt(t.p99, 3),
    'direct req/s': fmt(d.rps, 0),
    'direct TLS req/s': fmt(dt.rps, 0),
    'tunnel req/s': fmt(t.rps, 0),
  });
}
console.table(rows);

console.log(
  '\nLarge bodies (streamed; peak RSS = VmHWM of each process over that row alone: reset before it through /proc/<pid>/clear_refs)',
);
const bodyRows = [];
/** Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0), so each row has its own peak. */
const resetPeak = (pid) => writeFileSync(`/proc/${pid}/clear_refs`, '5');
const peaks = [gateway.pid, agent.pid, process.pid];
for (const size of BODY_SIZES_MIB) {
  const bytes = size * 1024 * 1024;
  for (const pid of peaks) resetPeak(pid);
  const start = peaks.map((pid) => rssKb(pid));
  let t = process.hrtime.bigint();
  const dn = await direct(`/bytes/${bytes}`);
  const dMs = Number(process.hrtime.bigint() - t) / 1e6;
  t = process.hrtime.bigint();
  const dtn = await directTls(`/bytes/${bytes}`);
  const dtMs = Number(process.hrtime.bigint() - t) / 1e6;
  t = process.hrtime.bigint();
  const tn = await tunnelled(`/bytes/${bytes}`);
  const tMs = Number(process.hrtime.bigint() - t) / 1e6;
  if (dn !== bytes || dtn !== bytes || tn !== bytes)
    throw new Error(`short body: ${dn} / ${dtn} / ${tn} of ${bytes}`);
  const peak = (i) => `${mib(start[i])} → ${mib(rssKb(peaks[i], 'VmHWM'))}`;
  bodyRows.push({
    body: `${size} MiB`,
    'direct MiB/s': fmt(size / (dMs / 1000), 0),
    'direct TLS MiB/s': fmt(size / (dtMs / 1000), 0),
    'tunnel MiB/s': fmt(size / (tMs / 1000), 0),
    'tunnel/direct TLS': fmt(dtMs / tMs, 2),
    'gateway RSS → peak': peak(0),
    'agent RSS → peak': peak(1),
    'client RSS → peak': peak(2),
  });
}
console.table(bodyRows);

console.log(
  `\nIdle agents on one gateway (${IDLE_WINDOW_MS / 1000} s heartbeats; CPU measured over one interval)`,
);
const idleRows = [];
const headerAuth = '--auth=header:x-agent-id:^([a-z0-9-]+)$';
for (const n of IDLE_SIZES) {
  const port = await freePort();
  const idleGw = await spawnApp(
    'stream-gateway',
    gwArgs(port, await freePort(), [
      '--insecure-plaintext',
      headerAuth,
      '--internal-auth=header:x-caller:^([a-z0-9-]+)$',
      '--internal-allowed-clients=bench-proxy',
    ]),
    'stream gateway started',
  );
  await new Promise((r) => setTimeout(r, 1000));
  const before = rssKb(idleGw.pid);
  const sim = spawn(
    process.execPath,
    [
      path.join(root, 'scripts/bench/idle-agents.mjs'),
      `127.0.0.1:${port}`,
      String(n),
      String(IDLE_WINDOW_MS),
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.add(sim);
  const t0 = Date.now();
  await new Promise((resolve, reject) => {
    sim.stdout.on('data', (d) => d.toString().includes('all connected') && resolve());
    sim.once('exit', (code) => reject(new Error(`simulator exited (${code})`)));
  });
  const connectSeconds = (Date.now() - t0) / 1000;
  await new Promise((r) => setTimeout(r, 2000));
  const ticks0 = cpuTicks(idleGw.pid);
  const w0 = Date.now();
  await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
  const cpu = ((cpuTicks(idleGw.pid) - ticks0) / 100 / ((Date.now() - w0) / 1000)) * 100;
  const after = rssKb(idleGw.pid);
  idleRows.push({
    agents: n,
    'connect all (s)': fmt(connectSeconds, 1),
    'gateway RSS before': mib(before),
    'gateway RSS after': mib(after),
    'KB per agent': fmt((after - before) / n, 1),
    'gateway CPU %': fmt(cpu, 2),
  });
  sim.kill('SIGKILL');
  idleGw.kill('SIGKILL');
  children.delete(sim);
  children.delete(idleGw);
}
console.table(idleRows);

router.stop();
await bus.close();
await pool.close();
backend.close();
await nats.stop();
process.exit(0);
