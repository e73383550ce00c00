// npm run bench:tracing — what tracing costs on a proxied GET. wrk (a separate process) drives
// the same small GET at the cluster API directly, then through resource proxy + gateway + agent
// (the built apps, separate processes) with tracing off (no --otlp-address: the default) and
// on (every service exporting to an in-process OTLP/gRPC receiver). Not a test: it prints figures.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { TokenAuthority } from '@pullplane/auth';
import {
  createTestPki,
  freePort,
  makeTempDir,
  seedArgoDemo,
  spawnAppProcess,
  startFakeKubeApiServer,
  startNatsServer,
  startOtlpReceiver,
} from '@pullplane/testing';

const DURATION = process.env.BENCH_DURATION ?? (process.env.BENCH_QUICK === '1' ? '3s' : '10s');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const PATH = '/api/v1/namespaces/demo';

const dir = makeTempDir('bench-tracing-');
const write = (name, body) => {
  const p = path.join(dir, name);
  writeFileSync(p, body);
  return p;
};
const pki = await createTestPki();
const nats = await startNatsServer();
const cluster = await startFakeKubeApiServer();
seedArgoDemo(cluster.store);
const kubeconfig = await cluster.writeKubeconfig(path.join(dir, 'cluster.kubeconfig'));
const receiver = await startOtlpReceiver();
const tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
const token = await tokens.issue('bench', { agents: ['agent-a'] });
const server = await pki.serverCert(['localhost', '127.0.0.1']);
const agentCert = await pki.agentCert('agent-a');
const proxyCert = await pki.proxyCert('resource-proxy');
const f = {
  ca: write('ca.crt', pki.ca.certPem),
  cert: write('tls.crt', server.certPem),
  key: write('tls.key', server.keyPem),
  agentCert: write('agent.crt', agentCert.certPem),
  agentKey: write('agent.key', agentCert.keyPem),
  proxyCert: write('proxy.crt', proxyCert.certPem),
  proxyKey: write('proxy.key', proxyCert.keyPem),
  jwt: write('jwt.key', tokens.exportPrivateKeyPem()),
};

/** wrk's requests/s and latency percentiles for one URL. */
async function wrk(url, headers = {}) {
  const args = ['-t1', `-c${CONNECTIONS}`, `-d${DURATION}`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  // Asynchronously: the cluster API and the OTLP receiver run in this process.
  const { stdout: out } = await promisify(execFile)('wrk', [...args, url], { encoding: 'utf8' });
  const ms = (label) => {
    const m = new RegExp(`${label}\\s+([\\d.]+)(us|ms|s)`).exec(out);
    if (!m) return Number.NaN;
    return Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  if (non2xx > 0) throw new Error(`wrk saw ${non2xx} failed responses:\n${out}`);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)[1]), p50: ms('50%'), p99: ms('99%') };
}

async function startServices(traced) {
  const otlp = traced ? [`--otlp-address=${receiver.address}`, '--otlp-insecure'] : [];
  const agentPort = await freePort();
  const proxyPort = await freePort();
  const gateway = spawnAppProcess('stream-gateway', [
    '--listen-host=127.0.0.1',
    `--listen-port=${agentPort}`,
    `--internal-listen-port=${await freePort()}`,
    '--advertise-address=127.0.0.1',
    `--tls-cert=${f.cert}`,
    `--tls-key=${f.key}`,
    `--root-ca-path=${f.ca}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
    ...otlp,
  ]);
  await gateway.waitForLine((l) => l.msg === 'stream gateway started', 20_000);
  const agent = spawnAppProcess('agent', [
    '--agent-name=agent-a',
    '--server-address=127.0.0.1',
    `--server-port=${agentPort}`,
    `--tls-client-cert=${f.agentCert}`,
    `--tls-client-key=${f.agentKey}`,
    `--root-ca-path=${f.ca}`,
    `--kubeconfig=${kubeconfig}`,
    '--resource-proxy-filter=none',
    '--metrics-port=0',
    '--healthz-port=0',
    ...otlp,
  ]);
  const proxy = spawnAppProcess('resource-proxy', [
    '--listen-host=127.0.0.1',
    `--listen-port=${proxyPort}`,
    `--resource-proxy-cert-path=${f.cert}`,
    `--resource-proxy-key-path=${f.key}`,
    `--resource-proxy-ca-path=${f.ca}`,
    `--token-key-path=${f.jwt}`,
    `--gateway-cert-path=${f.proxyCert}`,
    `--gateway-key-path=${f.proxyKey}`,
    `--gateway-ca-path=${f.ca}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
    ...otlp,
  ]);
  const url = `https://127.0.0.1:${proxyPort}/clusters/agent-a${PATH}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
    if (res?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`proxied GET never succeeded (${res?.status})`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, stop: () => Promise.all([proxy.stop(), gateway.stop(), agent.stop()]) };
}

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // fetch above: the test CA is not in Node's roots
const rows = [];
const direct = await wrk(`${cluster.url}${PATH}`);
rows.push({ path: 'cluster API direct', ...direct });
// Off and on alternate (ROUNDS times each) so load from elsewhere on the machine hits both alike.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const runs = { off: [], on: [] };
for (let i = 0; i < ROUNDS; i++) {
  for (const traced of [false, true]) {
    const s = await startServices(traced);
    runs[traced ? 'on' : 'off'].push(await wrk(s.url, { authorization: `Bearer ${token}` }));
    await s.stop();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = (list) => ({
  rps: median(list.map((r) => r.rps)),
  p50: median(list.map((r) => r.p50)),
  p99: median(list.map((r) => r.p99)),
});
rows.push({ path: 'through the proxy, tracing off (default)', ...summary(runs.off) });
rows.push({ path: 'through the proxy, tracing on (exporting)', ...summary(runs.on) });
const off = rows[1];
console.log(
  `\nProxied GET ${PATH} (wrk -c${CONNECTIONS} -d${DURATION}, median of ${ROUNDS} alternating rounds; ${new Date().toISOString()})`,
);
console.table(
  rows.map((r) => ({
    path: r.path,
    'req/s': r.rps.toFixed(0),
    'p50 ms': r.p50.toFixed(2),
    'p99 ms': r.p99.toFixed(2),
    'req/s vs off': (r.rps / off.rps).toFixed(2),
    'p50 vs off': (r.p50 / off.p50).toFixed(2),
  })),
);
console.log(`spans received while tracing was on: ${receiver.spans().length}`);
await receiver.close();
await cluster.close();
await nats.stop();
process.exit(0);
