// npm run bench:resource-proxy — wrk (its own process) against (a) the Kubernetes API stand-in
// directly, (b) the same behind nginx (one well-known L7 hop), (c) the real resource-proxy →
// stream-gateway → agent processes (built apps, mTLS on every hop, managed filter on), in one
// run: a named GET, a 500-item LIST and a ~20 MB LIST at concurrency 1, 16 and 64. Prints req/s,
// p50, p99, CPU seconds per 1,000 requests of each process, and the ratios ours/direct and
// ours/nginx, as markdown to paste into the resource proxy's README. Not a test.
//
// Needs on the PATH: wrk and nginx (Debian: `apt-get install wrk nginx-light`), nats-server.
// BENCH_QUICK=1 shortens each cell; BENCH_DURATION_S sets it (default 5 s).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { freePort, startNatsServer } from '@pullplane/testing';
import { benchPki, children, cpuTicks, root, spawnApp, spawnReady } from './processes.mjs';

const quick = process.env.BENCH_QUICK === '1';
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? (quick ? 2 : 5));
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number);

const missing = ['wrk', 'nginx', 'nats-server'].filter((tool) => {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return false;
  } catch {
    return true;
  }
});
if (missing.length > 0) {
  console.error(
    `bench:resource-proxy needs ${missing.join(', ')} on the PATH (Debian: apt-get install wrk nginx-light; nats-server from nats.io)`,
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
/** The pid and its children (nginx's workers). */
const family = (pid) => {
  const out = [pid];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
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
  direct: { base: apiUrl, token: apiToken, pids: () => [standIn.pid] },
  nginx: {
    base: `https://127.0.0.1:${nginxPort}`,
    token: apiToken,
    pids: () => [...family(nginx.pid), standIn.pid],
  },
  ours: {
    base: `https://127.0.0.1:${proxyPort}/clusters/bench-agent`,
    token: callerToken,
    pids: () => [proxy.pid, gateway.pid, agent.pid, standIn.pid],
  },
};
const PROCESS_NAMES = new Map([
  [proxy.pid, 'resource-proxy'],
  [gateway.pid, 'gateway'],
  [agent.pid, 'agent'],
  [standIn.pid, 'API stand-in'],
]);

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
  await wrk(url, t.token, c, request.durationFactor ? 3 : 1); // warm-up: connections, JIT, caches
  const pids = t.pids();
  const before = new Map(pids.map((p) => [p, cpuSeconds(p)]));
  const r = await wrk(url, t.token, c, DURATION_S * (request.durationFactor ?? 1));
  const cpu = new Map(pids.map((p) => [p, cpuSeconds(p) - (before.get(p) ?? 0)]));
  if (r.non2xx > 0 || r.errors) {
    console.error(
      `  ${target} ${request.name} c=${c}: ${r.non2xx} non-2xx, socket errors: ${r.errors ?? 'none'}`,
    );
  }
  return { ...r, cpu };
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const rate = (x) => fmt(x, x < 10 ? 2 : 0);
const ms = (x) => (x < 10 ? fmt(x, 2) : fmt(x, 1));
const per1k = (seconds, requests) => (requests > 0 ? (seconds * 1000) / requests : Number.NaN);

console.log(
  `bench:resource-proxy, ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, ${DURATION_S} s per cell (wrk; nginx 1 worker)\n`,
);
if (process.env.BENCH_HOLD) {
  // Diagnosis: print the endpoints and wait (Ctrl-C ends it).
  console.log(
    JSON.stringify({ ours: TARGETS.ours.base, token: callerToken, direct: apiUrl, apiToken, caFile }),
  );
  await new Promise(() => undefined);
}
const only = process.env.BENCH_REQUESTS?.split(',');
for (const request of REQUESTS.filter((_, i) => !only || only.includes(String(i)))) {
  console.log(`### ${request.name} (\`${request.path}\`)\n`);
  console.log(
    '| c | direct req/s | nginx req/s | ours req/s | ours/direct | ours/nginx | p50 direct / nginx / ours ms | p99 direct / nginx / ours ms | CPU s per 1k req: proxy / gateway / agent / stand-in (nginx) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const c of CONCURRENCY) {
    const d = await cell('direct', request, c);
    const n = await cell('nginx', request, c);
    const o = await cell('ours', request, c);
    const oursCpu = [proxy.pid, gateway.pid, agent.pid, standIn.pid].map((p) =>
      fmt(per1k(o.cpu.get(p) ?? 0, o.requests), 2),
    );
    const nginxCpu = [...n.cpu].filter(([p]) => !PROCESS_NAMES.has(p)).reduce((s, [, v]) => s + v, 0);
    console.log(
      `| ${c} | ${rate(d.rps)} | ${rate(n.rps)} | ${rate(o.rps)} | ${fmt(o.rps / d.rps, 2)}× | ${fmt(o.rps / n.rps, 2)}× | ${ms(d.p50)} / ${ms(n.p50)} / ${ms(o.p50)} | ${ms(d.p99)} / ${ms(n.p99)} / ${ms(o.p99)} | ${oursCpu.join(' / ')} (${fmt(per1k(nginxCpu, n.requests), 2)}) |`,
    );
  }
  console.log('');
}

const exited = (p) => new Promise((r) => (p.exitCode !== null ? r() : p.once('exit', r)));
proxy.kill('SIGTERM');
agent.kill('SIGTERM');
gateway.kill('SIGTERM');
await Promise.all([proxy, agent, gateway].map(exited));
standIn.kill('SIGTERM');
// nginx's master stops its workers on SIGQUIT; killed outright on exit, it would leave them running.
nginx.kill('SIGQUIT');
await exited(nginx);
await nats.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
