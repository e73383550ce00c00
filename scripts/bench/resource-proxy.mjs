// npm run bench:resource-proxy — wrk (its own process) against (a) the Kubernetes API stand-in
// directly, (b) the same behind nginx (one well-known L7 hop), (c) three haproxy hops with TLS
// on each leg and (d) three naive node:https forwarders (the calibrations: a C chain and a naive
// Node chain as long as ours), (e) the real resource-proxy → stream-gateway → agent processes
// (built apps, mTLS on every hop, managed filter on), in one run: a named GET, a 500-item LIST
// and a ~20 MB LIST at concurrency 1, 16 and 64. Prints req/s, p50, p99 and CPU µs per request of
// every process on each path (from /proc), the ratio to direct, and for the named GET the
// issue's targets met or missed. Not a test.
//
// Needs on the PATH: wrk, nginx, haproxy (Debian: `apt-get install wrk nginx-light haproxy`),
// nats-server.
// BENCH_QUICK=1 shortens each cell; BENCH_DURATION_S sets it (default 5 s).
// BENCH_ORDER=ours,direct,nginx,haproxy,node: the order the paths run in within a cell (default:
// ours last). A Node process idle while other paths run can come back slower: V8's memory reducer
// (our apps start without it; the naive forwarders keep Node's defaults).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { freePort, startNatsServer } from '@pullplane/testing';
import { startHaproxyHops, startNodeForwarders } from './calibrations.mjs';
import {
  benchPki,
  children,
  cpuSplitTicks,
  cpuTicks,
  family,
  mainThreadTicks,
  root,
  spawnApp,
  spawnReady,
  stopAll,
} from './processes.mjs';

const quick = process.env.BENCH_QUICK === '1';
const WARM_CONCURRENCY = 16;
/** Paths (target and request) warmed up already. */
const warmed = new Set();
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? (quick ? 2 : 5));
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);
const PATHS = ['direct', 'nginx', 'haproxy', 'node', 'ours'];
const ORDER = process.env.BENCH_ORDER?.split(',') ?? PATHS;
if (ORDER.length !== PATHS.length || !PATHS.every((t) => ORDER.includes(t)))
  throw new Error(`BENCH_ORDER must name each of ${PATHS.join(', ')} once`);

const missing = ['wrk', 'nginx', 'haproxy', 'nats-server'].filter((tool) => {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});
if (missing.length > 0) {
  console.error(
    `bench:resource-proxy needs ${missing.join(', ')} on the PATH (Debian: apt-get install wrk nginx-light haproxy; nats-server from nats.io)`,
  );
  process.exit(2);
}

const TICK = 100; // USER_HZ on Linux
const cpuSeconds = (pid) => {
  try {
    return cpuTicks(pid) / TICK;
  } catch {
    return 0;
  }
};
const userSeconds = (pid) => {
  try {
    return cpuSplitTicks(pid).user / TICK;
  } catch {
    return 0;
  }
};
const mainThreadSeconds = (pid) => {
  try {
    return mainThreadTicks(pid) / TICK;
  } catch {
    return 0;
  }
};
// ---- fixtures --------------------------------------------------------------------------
const { dir, file, server, agentCert, proxyCert, caFile, tlsCrt, tlsKey } = await benchPki(
  'bench-resource-proxy-',
  'resource-proxy',
);
chmodSync(dir, 0o755);
const apiToken = 'bench-agent-service-account-token';

const b64 = (s) => Buffer.from(s).toString('base64');
const standIn = await spawnReady(
  process.execPath,
  [
    path.join(root, 'scripts', 'bench', 'kube-stand-in.mjs'),
    b64(server.certPem),
    b64(server.keyPem),
    b64(apiToken),
  ],
  '"url"',
);
const apiUrl = JSON.parse(standIn.out().trim().split('\n').at(-1)).url;
const apiPort = new URL(apiUrl).port;

// nginx: one worker, keep-alive upstream, streaming (no buffering), no access log.
const nginxPort = await freePort();
mkdirSync(path.join(dir, 'tmp'));
const nginxConf = file(
  'nginx.conf',
  `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  upstream kube { server 127.0.0.1:${apiPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${nginxPort} ssl;
    ssl_certificate ${tlsCrt};
    ssl_certificate_key ${tlsKey};
    location / {
      proxy_pass https://kube;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_ssl_session_reuse on;
      proxy_buffering off;
    }
  }
}
`,
);
const nginx = spawn('nginx', ['-p', dir, '-c', nginxConf], { stdio: 'ignore' });
children.add(nginx);
await new Promise((r) => setTimeout(r, 500));
if (nginx.exitCode !== null)
  throw new Error(`nginx exited: ${readFileSync(path.join(dir, 'nginx-error.log'), 'utf8')}`);

const haproxy = await startHaproxyHops({
  target: { port: Number(apiPort), tls: true },
  file,
  certPem: server.certPem,
  keyPem: server.keyPem,
});
const forwarders = await startNodeForwarders({
  target: { port: Number(apiPort), tls: true },
  certFile: tlsCrt,
  keyFile: tlsKey,
});

const nats = await startNatsServer();
const gwPort = await freePort();
const gwInternal = await freePort();
const gateway = await spawnApp(
  'stream-gateway',
  [
    '--listen-host=127.0.0.1',
    `--listen-port=${gwPort}`,
    `--internal-listen-port=${gwInternal}`,
    '--advertise-address=127.0.0.1',
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
    `--tls-cert=${tlsCrt}`,
    `--tls-key=${tlsKey}`,
    `--root-ca-path=${caFile}`,
  ],
  'stream gateway started',
);
const kubeconfig = file(
  'kubeconfig',
  `apiVersion: v1\nkind: Config\nclusters: [{name: b, cluster: {server: "${apiUrl}", certificate-authority: "${caFile}"}}]\nusers: [{name: u, user: {token: ${apiToken}}}]\ncontexts: [{name: b, context: {cluster: b, user: u}}]\ncurrent-context: b\n`,
);
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
    '--resource-proxy-filter=managed',
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  'tunnel established',
);
const callers = await TokenAuthority.generate({ audience: 'resource-proxy' });
const proxyPort = await freePort();
const proxy = await spawnApp(
  'resource-proxy',
  [
    '--listen-host=127.0.0.1',
    `--listen-port=${proxyPort}`,
    '--metrics-port=0',
    '--healthz-port=0',
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    `--resource-proxy-cert-path=${tlsCrt}`,
    `--resource-proxy-key-path=${tlsKey}`,
    `--resource-proxy-ca-path=${caFile}`,
    `--token-key-path=${file('jwt.key', callers.exportPrivateKeyPem())}`,
    `--gateway-cert-path=${file('proxy.crt', proxyCert.certPem)}`,
    `--gateway-key-path=${file('proxy.key', proxyCert.keyPem)}`,
    `--gateway-ca-path=${caFile}`,
  ],
  'resource proxy listening',
);
const callerToken = await callers.issue('bench-caller', { agents: ['bench-agent'], ttlSeconds: 3600 });

// ---- load --------------------------------------------------------------------------------
const REQUESTS = [
  { name: 'named GET', path: '/api/v1/namespaces/bench/pods/bench-pod' },
  { name: '500-item LIST', path: '/api/v1/namespaces/bench-list/configmaps' },
  // Each takes most of a second even directly: longer cells, so every one completes several.
  { name: '20 MB LIST', path: '/api/v1/namespaces/bench-big/configmaps', durationFactor: 4 },
];
const TARGETS = {
  direct: { label: 'direct', base: apiUrl, token: apiToken, pids: () => [standIn.pid] },
  nginx: {
    label: 'nginx',
    base: `https://127.0.0.1:${nginxPort}`,
    token: apiToken,
    pids: () => [...family(nginx.pid), standIn.pid],
  },
  haproxy: {
    label: 'haproxy ×3, TLS each leg',
    base: `https://127.0.0.1:${haproxy.port}`,
    token: apiToken,
    pids: () => [...haproxy.pids, standIn.pid],
  },
  node: {
    label: 'node:https ×3',
    base: `https://127.0.0.1:${forwarders.port}`,
    token: apiToken,
    pids: () => [...forwarders.pids, standIn.pid],
  },
  ours: {
    label: 'ours',
    base: `https://127.0.0.1:${proxyPort}/clusters/bench-agent`,
    token: callerToken,
    pids: () => [proxy.pid, gateway.pid, agent.pid, standIn.pid],
  },
};
const PROCESS_NAMES = new Map([
  [proxy.pid, 'proxy'],
  [gateway.pid, 'gateway'],
  [agent.pid, 'agent'],
  [standIn.pid, 'stand-in'],
  ...haproxy.pids.map((p, i) => [p, haproxy.names[i]]),
  ...forwarders.pids.map((p, i) => [p, forwarders.names[i]]),
]);
/**
 * CPU µs per request of each process of a cell, by name (nginx's master and workers as one);
 * `part: 'user'` counts user space only (the rest is the kernel's), `'main'` the main thread only
 * (the rest is the process's other threads').
 */
function cpuPerRequest(cellResult, part = 'all') {
  const out = new Map();
  const counted = part === 'user' ? cellResult.user : part === 'main' ? cellResult.main : cellResult.cpu;
  for (const [pid, seconds] of counted) {
    const name = PROCESS_NAMES.get(pid) ?? 'nginx';
    out.set(name, (out.get(name) ?? 0) + seconds);
  }
  for (const [name, seconds] of out)
    out.set(name, cellResult.requests > 0 ? (seconds * 1e6) / cellResult.requests : Number.NaN);
  return out;
}

const toMs = (v) => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : n * 60_000;
};
function wrk(url, token, connections, seconds) {
  return new Promise((resolve, reject) => {
    const args = [
      `-t${Math.min(connections, 2)}`,
      `-c${connections}`,
      `-d${seconds}s`,
      '--latency',
      '--timeout',
      '30s',
      '-H',
      `Authorization: Bearer ${token}`,
      url,
    ];
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk failed (${code}): ${out}`));
      if (process.env.BENCH_DEBUG) console.error(out);
      const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const errors = /Socket errors: (.*)/.exec(out)?.[1];
      resolve({
        requests,
        non2xx,
        errors,
        rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
        p50: toMs(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
        p99: toMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
      });
    });
  });
}

async function cell(target, request, c) {
  const t = TARGETS[target];
  const url = `${t.base}${request.path}`;
  // Warm-up: the JIT first, longest before a path's first cell (a second served too few
  // requests for the optimizing compiler on a slow machine, at c=1 by far: its cells measured
  // compilation), at this cell's concurrency or more; below 16, three seconds at its own after:
  // at one connection our processes still optimized code for another two seconds or so after
  // one (40-50 µs per request of the proxy's and the agent's other threads in a 5 s cell, against
  // 2-5 once settled; the 'main thread · other threads' line shows it).
  const first = !warmed.has(`${target} ${request.name}`);
  warmed.add(`${target} ${request.name}`);
  await wrk(url, t.token, Math.max(c, WARM_CONCURRENCY), first ? 6 : 2);
  if (c < WARM_CONCURRENCY) await wrk(url, t.token, c, 3);
  const pids = t.pids();
  const before = new Map(pids.map((p) => [p, cpuSeconds(p)]));
  const userBefore = new Map(pids.map((p) => [p, userSeconds(p)]));
  const mainBefore = new Map(pids.map((p) => [p, mainThreadSeconds(p)]));
  const r = await wrk(url, t.token, c, DURATION_S * (request.durationFactor ?? 1));
  const cpu = new Map(pids.map((p) => [p, cpuSeconds(p) - (before.get(p) ?? 0)]));
  const user = new Map(pids.map((p) => [p, userSeconds(p) - (userBefore.get(p) ?? 0)]));
  const main = new Map(pids.map((p) => [p, mainThreadSeconds(p) - (mainBefore.get(p) ?? 0)]));
  if (r.non2xx > 0 || r.errors) {
    console.error(
      `  ${target} ${request.name} c=${c}: ${r.non2xx} non-2xx, socket errors: ${r.errors ?? 'none'}`,
    );
  }
  return { ...r, cpu, user, main };
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const rate = (x) => fmt(x, x < 10 ? 2 : 0);
const ms = (x) => (x < 10 ? fmt(x, 2) : fmt(x, 1));
const cpuText = (perRequest) =>
  [...perRequest]
    .filter(([name]) => name !== 'stand-in')
    .map(([name, us]) => `${name} ${fmt(us)}`)
    .join(' · ');

console.log(
  `bench:resource-proxy, ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}, ${DURATION_S} s per cell (wrk; nginx 1 worker; haproxy 1 thread per hop)\n`,
);
if (process.env.BENCH_HOLD) {
  // Diagnosis: print the endpoints and wait (Ctrl-C ends it).
  console.log(
    JSON.stringify({ ours: TARGETS.ours.base, token: callerToken, direct: apiUrl, apiToken, caFile }),
  );
  await new Promise(() => undefined);
}
const only = process.env.BENCH_REQUESTS?.split(',');
const namedGet = new Map(); // c → { target → cell }
for (const [index, request] of REQUESTS.entries()) {
  if (only && !only.includes(String(index))) continue;
  console.log(`### ${request.name} (\`${request.path}\`)\n`);
  console.log(
    '| c | path | req/s | p50 ms | p99 ms | vs direct | CPU µs per request, each process on the path (the stand-in, common to all, left out) |',
  );
  console.log('| --- | --- | ---: | ---: | ---: | ---: | --- |');
  for (const c of CONCURRENCY) {
    const cells = {};
    for (const target of ORDER) cells[target] = await cell(target, request, c);
    for (const [target, r] of Object.entries(cells)) {
      const perRequest = cpuPerRequest(r);
      console.log(
        `| ${c} | ${TARGETS[target].label} | ${rate(r.rps)} | ${ms(r.p50)} | ${ms(r.p99)} | ${fmt(r.rps / cells.direct.rps, 2)}× | ${target === 'direct' ? `stand-in ${fmt(perRequest.get('stand-in'))}` : cpuText(perRequest)} |`,
      );
    }
    if (index === 0) namedGet.set(c, cells);
  }
  console.log('');
}

// The targets, for the named GET, from the cells above.
if (namedGet.size > 0) {
  console.log('### Targets (named GET)\n');
  console.log('| target | measured | |');
  console.log('| --- | --- | --- |');
  const verdict = (ok, by) => (ok ? 'met' : `**missed${by ? `, ${by}` : ''}**`);
  const c1 = namedGet.get(1);
  if (c1) {
    const added = c1.ours.p50 - c1.direct.p50;
    console.log(
      `| ≤ 1.0 ms added p50 at c=1 | ${ms(added)} ms | ${verdict(added <= 1, `by ${ms(added - 1)} ms`)} |`,
    );
    const ours = cpuPerRequest(c1.ours);
    const naiveMax = Math.max(...forwarders.names.map((n) => cpuPerRequest(c1.node).get(n) ?? 0));
    for (const hop of ['proxy', 'gateway', 'agent']) {
      const us = ours.get(hop) ?? Number.NaN;
      console.log(
        `| c=1: ${hop} ≤ a naive forwarder hop (${fmt(naiveMax)} µs) | ${fmt(us)} µs | ${verdict(us <= naiveMax, `by ${fmt(us - naiveMax)} µs`)} |`,
      );
    }
    // Where a hop's cost lies: the kernel's share (sockets, TLS records' system calls) or user
    // space (JavaScript, Node's runtime, TLS crypto, garbage collection).
    const split = (cellResult, names, part) => {
      const all = cpuPerRequest(cellResult);
      const some = cpuPerRequest(cellResult, part);
      return names
        .map(
          (n) =>
            `${n} ${fmt(some.get(n))} · ${fmt((all.get(n) ?? Number.NaN) - (some.get(n) ?? Number.NaN))}`,
        )
        .join(', ');
    };
    const hops = ['proxy', 'gateway', 'agent'];
    console.log(
      `| c=1 CPU µs per request, user · system | ours: ${split(c1.ours, hops, 'user')}; naive: ${split(c1.node, forwarders.names, 'user')} | |`,
    );
    // Other threads: V8's garbage collection and optimizing compiler; a cell that still
    // compiles shows it here (the warm-up is meant to leave it at a few µs).
    console.log(
      `| c=1 CPU µs per request, main thread · other threads | ours: ${split(c1.ours, hops, 'main')}; naive: ${split(c1.node, forwarders.names, 'main')} | |`,
    );
  }
  const c64 = namedGet.get(64);
  if (c64) {
    const ratio = c64.ours.rps / c64.direct.rps;
    console.log(
      `| ≥ 0.2× direct at c=64 | ${fmt(ratio, 3)}× | ${verdict(ratio >= 0.2, `${fmt(0.2 / ratio, 1)}×`)} |`,
    );
    const ours = cpuPerRequest(c64.ours);
    for (const [hop, limit] of [
      ['gateway', 60],
      ['proxy', 120],
      ['agent', 120],
    ]) {
      const us = ours.get(hop) ?? Number.NaN;
      console.log(
        `| c=64: ${hop} ≤ ${limit} µs | ${fmt(us)} µs | ${verdict(us <= limit, `by ${fmt(us - limit)} µs`)} |`,
      );
    }
  }
  console.log('');
}

await stopAll([proxy, agent, gateway]);
standIn.kill('SIGTERM');
// nginx's master stops its workers on SIGQUIT; killed outright on exit, it would leave them running.
await stopAll([nginx], 'SIGQUIT');
await Promise.all([haproxy.stop(), forwarders.stop()]);
await nats.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
