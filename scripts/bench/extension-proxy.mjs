// npm run bench:extension-proxy — wrk against an HTTP backend directly, through nginx as a peer
// reverse proxy, through the two calibration chains (three haproxy hops with TLS on each leg,
// three naive node:https forwarders) and through the extension proxy → gateway → agent →
// backend (real processes, a bearer token as Argo CD would send it); small responses
// (requests/s, latency) and a 1 MiB download (throughput). CPU µs per request of every process
// on each path comes from /proc; peak RSS of each of ours is sampled per row (VmHWM reset
// before it). Not a test: it prints figures.
import { execFile } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TokenAuthority } from '@pullplane/auth';
import { findBinary, freePort, startNatsServer } from '@pullplane/testing';
import { startHaproxyHops, startNodeForwarders } from './calibrations.mjs';
import { benchPki, cpuTicks, family, spawnApp, spawnReady, statusKb, stopAll } from './processes.mjs';

const run = promisify(execFile);
const quick = process.env.BENCH_QUICK === '1';
const DURATION = process.env.BENCH_DURATION ?? (quick ? '3s' : '10s');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
// BENCH_ORDER=ours,direct,peer,haproxy,node: the order the rows of a size run in (default: ours
// last). A Node process idle while other rows run can come back slower: V8's memory reducer (our
// apps start without it; the naive forwarders keep Node's defaults). Compare orders to see it.
const PATHS = ['direct', 'peer', 'haproxy', 'node', 'ours'];
const ORDER = process.env.BENCH_ORDER?.split(',') ?? PATHS;
if (ORDER.length !== PATHS.length || !PATHS.every((k) => ORDER.includes(k)))
  throw new Error(`BENCH_ORDER must name each of ${PATHS.join(', ')} once`);

const rss = (pid) => statusKb(pid) * 1024;
const cpuSeconds = (pid) => cpuTicks(pid) / 100; // USER_HZ on Linux

const { dir, file, server, agentCert, proxyCert, caFile } = await benchPki(
  'bench-extension-proxy-',
  'extension-proxy',
);
// nginx's workers may run as another user: they must be able to read the files they serve.
chmodSync(dir, 0o755);

// ---- the backend: nginx serving static files (so the backend is never the bottleneck) ----
const nginx = findBinary('nginx', 'apt-get install nginx');
const wrk = findBinary('wrk', 'apt-get install wrk');
const www = path.join(dir, 'www');
await run('mkdir', ['-p', www, path.join(dir, 'nginx-tmp')]);
writeFileSync(path.join(www, 'small.json'), `${JSON.stringify({ ok: true, pad: 'x'.repeat(900) })}\n`);
writeFileSync(path.join(www, 'big.bin'), Buffer.alloc(1024 * 1024, 0x61));
const backendPort = await freePort();
const peerPort = await freePort();
const nginxConf = file(
  'nginx.conf',
  `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/nginx-tmp; proxy_temp_path ${dir}/nginx-tmp;
  fastcgi_temp_path ${dir}/nginx-tmp; uwsgi_temp_path ${dir}/nginx-tmp; scgi_temp_path ${dir}/nginx-tmp;
  server { listen 127.0.0.1:${backendPort}; root ${www}; }
  upstream backend { server 127.0.0.1:${backendPort}; keepalive 32; }
  server {
    listen 127.0.0.1:${peerPort};
    location /metrics/ {
      proxy_pass http://backend/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Cookie "";
      proxy_set_header Authorization "";
    }
  }
}
`,
);
const nginxProcess = await spawnReady(nginx, ['-c', nginxConf, '-p', dir], undefined);
const haproxy = await startHaproxyHops({
  target: { port: backendPort, tls: false },
  file,
  certPem: server.certPem,
  keyPem: server.keyPem,
});
const forwarders = await startNodeForwarders({
  target: { port: backendPort, tls: false },
  certFile: file('tls.crt', server.certPem),
  keyFile: file('tls.key', server.keyPem),
});

// ---- pullplane: nats, gateway, agent (extension map → nginx), extension proxy ----
const nats = await startNatsServer();
const gwPort = await freePort();
const gateway = await spawnApp(
  'stream-gateway',
  [
    '--listen-host=127.0.0.1',
    `--listen-port=${gwPort}`,
    `--internal-listen-port=${await freePort()}`,
    '--advertise-address=127.0.0.1',
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    `--tls-cert=${file('tls.crt', server.certPem)}`,
    `--tls-key=${file('tls.key', server.keyPem)}`,
    `--root-ca-path=${caFile}`,
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  'stream gateway started',
);
const agent = await spawnApp(
  'agent',
  [
    '--agent-name=bench-agent',
    '--server-address=127.0.0.1',
    `--server-port=${gwPort}`,
    '--creds=mtls:',
    `--tls-client-cert=${file('agent.crt', agentCert.certPem)}`,
    `--tls-client-key=${file('agent.key', agentCert.keyPem)}`,
    `--root-ca-path=${caFile}`,
    '--enable-resource-proxy=false',
    `--extensions-config-path=${file('extensions.yaml', `extensions:\n  - name: metrics\n    url: http://127.0.0.1:${backendPort}/\n`)}`,
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  'tunnel established',
);
const tokens = await TokenAuthority.generate({ audience: 'extension-proxy' });
const extPort = await freePort();
const proxy = await spawnApp(
  'extension-proxy',
  [
    '--listen-host=127.0.0.1',
    `--listen-port=${extPort}`,
    `--tls-cert-path=${file('tls.crt', server.certPem)}`,
    `--tls-key-path=${file('tls.key', server.keyPem)}`,
    `--client-ca-path=${caFile}`,
    `--token-key-path=${file('token.key', tokens.exportPrivateKeyPem())}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    `--gateway-cert-path=${file('proxy.crt', proxyCert.certPem)}`,
    `--gateway-key-path=${file('proxy.key', proxyCert.keyPem)}`,
    `--gateway-ca-path=${caFile}`,
    '--log-level=warn',
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  undefined,
);
const token = await tokens.issue('argocd-server');
const argocd = [
  `Authorization: Bearer ${token}`,
  'Argocd-Application-Name: argocd:guestbook',
  'Argocd-Project-Name: default',
  'Argocd-Target-Cluster-Name: bench-agent',
  'Argocd-Username: bench',
];
// Wait until the proxy knows the agent (presence) and serves.
for (let i = 0; ; i++) {
  try {
    const { stdout } = await run('curl', [
      '-sk',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      ...argocd.flatMap((h) => ['-H', h]),
      `https://127.0.0.1:${extPort}/metrics/small.json`,
    ]);
    if (stdout === '200') break;
  } catch {}
  if (i > 100) {
    const { stdout } = await run('curl', [
      '-sk',
      ...argocd.flatMap((h) => ['-H', h]),
      `https://127.0.0.1:${extPort}/metrics/small.json`,
    ]).catch((e) => ({ stdout: String(e) }));
    throw new Error(`the extension proxy never answered 200: ${stdout}`);
  }
  await new Promise((r) => setTimeout(r, 100));
}

if (process.env.BENCH_HOLD) {
  // Diagnosis: print the endpoints and pids, and wait (Ctrl-C ends it).
  console.log(
    JSON.stringify({
      url: `https://127.0.0.1:${extPort}/metrics/small.json`,
      headers: argocd,
      pids: { proxy: proxy.pid, gateway: gateway.pid, agent: agent.pid },
    }),
  );
  await new Promise(() => undefined);
}

// ---- rows ----
const ours = { proxy: proxy.pid, gateway: gateway.pid, agent: agent.pid };
const byName = (names, pids) => Object.fromEntries(names.map((n, i) => [n, pids[i]]));
async function row(name, url, headers, pids) {
  // Warm-up, as bench:resource-proxy does per cell: JIT, connections, caches. One second was
  // too few requests for the optimizing compiler on a slow machine: the first row of ours ran
  // at half the rate it reaches warm.
  await run(wrk, [
    `-t${Math.min(2, CONNECTIONS)}`,
    `-c${CONNECTIONS}`,
    '-d5s',
    ...headers.flatMap((h) => ['-H', h]),
    url,
  ]);
  // Peak RSS over this row alone: VmHWM reset before it (as bench:tunnel does).
  for (const pid of Object.values(ours)) writeFileSync(`/proc/${pid}/clear_refs`, '5');
  const base = Object.fromEntries(Object.entries(ours).map(([k, pid]) => [k, rss(pid)]));
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const { stdout } = await run(wrk, [
    `-t${Math.min(2, CONNECTIONS)}`,
    `-c${CONNECTIONS}`,
    `-d${DURATION}`,
    '--latency',
    ...headers.flatMap((h) => ['-H', h]),
    url,
  ]);
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0);
  const cpu = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => [
      k,
      requests > 0 ? ((cpuSeconds(pid) - cpuBefore[k]) * 1e6) / requests : Number.NaN,
    ]),
  );
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const xfer = /Transfer\/sec:\s+([\d.]+)(\w+)/.exec(stdout);
  const mb = xfer ? Number(xfer[1]) * ({ B: 1 / 1048576, KB: 1 / 1024, MB: 1, GB: 1024 }[xfer[2]] ?? 1) : 0;
  const p50 = /50%\s+([\d.]+\w+)/.exec(stdout)?.[1];
  const p99 = /99%\s+([\d.]+\w+)/.exec(stdout)?.[1];
  const errors = /Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? '0';
  const growth = Object.fromEntries(
    Object.entries(ours).map(([k, pid]) => [
      k,
      ((statusKb(pid, 'VmHWM') * 1024 - base[k]) / 1048576).toFixed(1),
    ]),
  );
  return { name, rps, mb, p50, p99, errors, growth, cpu };
}

const results = [];
// BENCH_SIZES=small skips the 1 MiB rows (profiling the per-request cost).
const sizes = [
  ['1 KiB', 'small.json'],
  ['1 MiB', 'big.bin'],
].filter(([, f]) => !process.env.BENCH_SIZES || process.env.BENCH_SIZES.split(',').includes(f.split('.')[0]));
for (const [size, file] of sizes) {
  // nginx is both the backend and the peer (one worker): its row counts both.
  const nginxWorkers = () =>
    Object.fromEntries(
      family(nginxProcess.pid).map((pid, i) => [i === 0 ? 'nginx' : `nginx worker ${i}`, pid]),
    );
  // Each path as [row name, url, headers, pids], run in ORDER.
  const paths = {
    direct: [`${size} backend direct`, `http://127.0.0.1:${backendPort}/${file}`, [], nginxWorkers()],
    peer: [
      `${size} nginx reverse proxy (CPU: proxy and backend)`,
      `http://127.0.0.1:${peerPort}/metrics/${file}`,
      argocd,
      nginxWorkers(),
    ],
    haproxy: [
      `${size} haproxy ×3, TLS each leg`,
      `https://127.0.0.1:${haproxy.port}/${file}`,
      [],
      byName(haproxy.names, haproxy.pids),
    ],
    node: [
      `${size} node:https ×3`,
      `https://127.0.0.1:${forwarders.port}/${file}`,
      [],
      byName(forwarders.names, forwarders.pids),
    ],
    ours: [`${size} extension proxy → tunnel`, `https://127.0.0.1:${extPort}/metrics/${file}`, argocd, ours],
  };
  const measured = {};
  for (const key of ORDER) measured[key] = await row(...paths[key]);
  const { direct, ours: ext } = measured;
  results.push({ size, direct, rows: ORDER.map((k) => measured[k]), ext });
}

const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '—');
console.log(
  `\nextension proxy benchmark — ${new Date().toISOString().slice(0, 16)}Z, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(
      ' ',
    )}, ${DURATION} per row, ${CONNECTIONS} connections, wrk -t${Math.min(2, CONNECTIONS)} (the nginx backend's CPU is counted only on its own rows)`,
);
console.log(
  '| row | req/s | MiB/s | p50 | p99 | non-2xx | vs direct | CPU µs per request, each process on the path | RSS growth proxy/gateway/agent (MiB) |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |');
for (const { direct, rows, ext } of results) {
  for (const r of rows) {
    const cpu = Object.entries(r.cpu)
      .map(([k, us]) => `${k} ${fmt(us)}`)
      .join(' · ');
    const g = r === ext ? `${r.growth.proxy}/${r.growth.gateway}/${r.growth.agent}` : '—';
    console.log(
      `| ${r.name} | ${fmt(r.rps)} | ${fmt(r.mb, 1)} | ${r.p50} | ${r.p99} | ${r.errors} | ${fmt(r.rps / direct.rps, 2)} | ${cpu} | ${g} |`,
    );
  }
}
const big = results.find((r) => r.size === '1 MiB');
if (big) {
  const worst = Math.max(...Object.values(big.ext.growth).map(Number));
  console.log(
    `\n1 MiB at ${CONNECTIONS} connections, RSS growth per process ≤ 16 MiB: ${worst} MiB at most, ${worst <= 16 ? 'met' : `**missed by ${(worst - 16).toFixed(1)} MiB**`}`,
  );
}
// A clean exit of our processes (SIGTERM) writes their CPU profiles under BENCH_CPU_PROF.
await stopAll([proxy, agent, gateway]);
// nginx's master stops its workers on SIGQUIT; killed outright, it would leave them running.
await stopAll([nginxProcess], 'SIGQUIT');
await Promise.all([haproxy.stop(), forwarders.stop()]);
await nats.stop();
process.exit(0);
