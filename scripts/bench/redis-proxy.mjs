// npm run bench:redis-proxy — redis-benchmark GET/SET throughput directly against redis-server,
// through the redis proxy (principal keys), through twemproxy (nutcracker) as a peer proxy and
// through a naive Node forwarder (node:net, one upstream connection per client, bytes piped) and
// a Node floor (multiplexing-tcp-forwarder.mjs: what a Node multiplexer costs with no proxy work);
// the same again pinned (Redis and redis-benchmark on CPU 0, the target alone on CPU 1: CPU per
// operation apart from the VM's phase); then agent-key GET (4 KiB and a 1 MiB gzip value, 1, 8
// and 50 clients) through proxy + gateway + agent versus the agent's Redis directly.
// Not a test: it prints figures.
//
// Processes: redis-servers (principal, agent), nats-server, the real stream-gateway, agent and
// redis-proxy apps (spawned from dist/), nutcracker, the two Node forwarders, redis-benchmark.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { findBinary, freePort, startNatsServer, startRedisServer } from '@pullplane/testing';
import Redis from 'ioredis';
import { benchPki, children, cpuTicks, root, spawnApp, spawnReady, stopAll } from './processes.mjs';

const run = promisify(execFile);
const quick = process.env.BENCH_QUICK === '1';
const N = Number(process.env.BENCH_REQUESTS ?? (quick ? 20_000 : 200_000));
const N_PIPELINED = N * 4;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (quick ? 1 : 3));
const N_LATENCY = Number(process.env.BENCH_LATENCY_REQUESTS ?? (quick ? 2_000 : 10_000));
// BENCH_PART=principal or agent runs one half (to profile it alone); BENCH_CLIENTS=8 one column;
// BENCH_ROUNDS: how many times each principal-key target is measured (the median is reported).
const PART = process.env.BENCH_PART;
const CLIENTS = (process.env.BENCH_CLIENTS ?? '1,8,50').split(',').map(Number);
// BENCH_VALUES=4k or 1m: one of the agent-key value sizes. BENCH_HOLD=1: start everything, print
// the endpoints and pids, and wait (for diagnosis by hand).
const VALUES = process.env.BENCH_VALUES?.split(',');

// ---- fixtures --------------------------------------------------------------------------
const { dir, file, server, agentCert, proxyCert, caFile } = await benchPki(
  'bench-redis-proxy-',
  'redis-proxy',
);

const principal = await startRedisServer();
const agentRedis = await startRedisServer();
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
    `--tls-cert=${file('tls.crt', server.certPem)}`,
    `--tls-key=${file('tls.key', server.keyPem)}`,
    `--root-ca-path=${caFile}`,
    '--internal-allowed-clients=redis-proxy',
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  'stream gateway started',
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
    '--enable-resource-proxy=false',
    `--redis-addr=127.0.0.1:${agentRedis.port}`,
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  'tunnel established',
);
const proxyPort = await freePort();
const proxy = await spawnApp(
  'redis-proxy',
  [
    '--listen-host=127.0.0.1',
    `--listen-port=${proxyPort}`,
    `--redis-server-address=127.0.0.1:${principal.port}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    `--gateway-cert-path=${file('proxy.crt', proxyCert.certPem)}`,
    `--gateway-key-path=${file('proxy.key', proxyCert.keyPem)}`,
    `--gateway-ca-path=${caFile}`,
    '--gateway-server-name=localhost',
    '--log-level=warn',
    '--metrics-port=0',
    '--healthz-port=0',
  ],
  undefined,
);

let twemPort;
let twemproxy;
try {
  const nutcracker = findBinary('nutcracker', 'apt-get install nutcracker');
  twemPort = await freePort();
  const conf = file(
    'nutcracker.yml',
    [
      'bench:',
      `  listen: 127.0.0.1:${twemPort}`,
      '  hash: fnv1a_64',
      '  distribution: ketama',
      '  redis: true',
      '  auto_eject_hosts: false',
      '  servers:',
      `    - 127.0.0.1:${principal.port}:1`,
      '',
    ].join('\n'),
  );
  twemproxy = await spawnReady(nutcracker, [
    '-c',
    conf,
    '-s',
    String(await freePort()),
    '-o',
    path.join(dir, 'nutcracker.log'),
  ]);
} catch (err) {
  console.error(`twemproxy skipped: ${err.message}`);
  twemPort = undefined;
}

// What Node's sockets cost per read and write, with nothing of a proxy's work on top: one
// upstream connection per client, bytes piped (naive); one shared upstream connection, batched
// per turn and read as the proxy reads (floor).
const floorPort = await freePort();
const floor = await spawnReady(
  process.execPath,
  [
    path.join(root, 'scripts', 'bench', 'multiplexing-tcp-forwarder.mjs'),
    String(floorPort),
    String(principal.port),
  ],
  'forwarding',
);
const naivePort = await freePort();
const naive = await spawnReady(
  process.execPath,
  [path.join(root, 'scripts', 'bench', 'naive-tcp-forwarder.mjs'), String(naivePort), String(principal.port)],
  'forwarding',
);

// ---- redis-benchmark ---------------------------------------------------------------------
/** `cpu`: run redis-benchmark on that core only (through `taskset`, when given). */
async function benchmark(port, extra, cpu) {
  const args = ['-h', '127.0.0.1', '-p', String(port), '--csv', ...extra];
  const { stdout } = await run(
    cpu === undefined ? 'redis-benchmark' : cpu.taskset,
    cpu === undefined ? args : ['-c', cpu.core, 'redis-benchmark', ...args],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  const rows = {};
  for (const line of stdout.trim().split('\n').slice(1)) {
    const cells = line.split(',').map((c) => c.replace(/"/g, ''));
    rows[cells[0]] = { rps: Number(cells[1]), p50: Number(cells[4]), p99: Number(cells[6]) };
  }
  return rows;
}
/** CPU µs per operation of each process in `pids` over `work` ({ name: pid }; ops counted by the caller). */
async function cpuOver(pids, work) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuTicks(pid)]));
  const result = await work();
  const ticks = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuTicks(pid) - before[k]]));
  // USER_HZ = 100: one tick is 10,000 µs.
  return {
    result,
    perOp: (ops) => Object.fromEntries(Object.entries(ticks).map(([k, t]) => [k, (t * 10_000) / ops])),
  };
}
async function throughput(port, pids, warmUp) {
  // Warm up first (JIT, connection pools): every target gets the same treatment.
  if (warmUp)
    await benchmark(port, ['-t', 'get,set', '-c', '50', '-n', String(Math.min(N, 50_000)), '-r', '100000']);
  const plainRun = await cpuOver(pids, () =>
    benchmark(port, ['-t', 'get,set', '-c', '50', '-n', String(N), '-r', '100000']),
  );
  const plain = plainRun.result;
  const pipedRun = await cpuOver(pids, () =>
    benchmark(port, ['-t', 'get,set', '-c', '50', '-n', String(N_PIPELINED), '-r', '100000', '-P', '16']),
  );
  const piped = pipedRun.result;
  return {
    get: plain.GET.rps,
    set: plain.SET.rps,
    getP: piped.GET.rps,
    setP: piped.SET.rps,
    // GET and SET, N each (N_PIPELINED each pipelined).
    cpu: plainRun.perOp(2 * N),
    cpuP: pipedRun.perOp(2 * N_PIPELINED),
  };
}

// Wait until the proxy can reach the agent (presence over NATS).
const agentKey = 'app|managed-resources|bench-agent_guestbook|1.8.3.gz';
const value = Buffer.alloc(4096, 120).toString();
for (let i = 0; ; i++) {
  const { stdout } = await run('redis-cli', ['-p', String(proxyPort), 'SET', agentKey, value]).catch(
    (e) => e,
  );
  if (String(stdout).trim() === 'OK') break;
  if (i > 200) throw new Error(`proxy never reached the agent: ${stdout}`);
  await new Promise((r) => setTimeout(r, 50));
}

if (process.env.BENCH_HOLD) {
  // Diagnosis: print the endpoints and pids, and wait (Ctrl-C ends it).
  console.log(
    JSON.stringify({
      proxyPort,
      principalPort: principal.port,
      agentRedisPort: agentRedis.port,
      twemproxyPort: twemPort,
      agentKey,
      pids: { proxy: proxy.pid, gateway: gateway.pid, agent: agent.pid },
    }),
  );
  await new Promise(() => undefined);
}

// Principal keys: every target measured ROUNDS times, each round in a rotated order (no target
// always runs first, or always after the same one); each cell is the median of its rounds.
const principalTargets =
  PART === 'agent'
    ? []
    : [
        ['redis-server (direct)', principal.port, {}],
        ['redis proxy (principal keys)', proxyPort, { proxy: proxy.pid }],
        ...(twemPort ? [['twemproxy (nutcracker)', twemPort, { twemproxy: twemproxy.pid }]] : []),
        ['Node floor (multiplexing forwarder, no proxy work)', floorPort, { node: floor.pid }],
        ['naive Node forwarder (node:net, 1:1)', naivePort, { node: naive.pid }],
      ];
const samples = principalTargets.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (let j = 0; j < principalTargets.length; j++) {
    const i = (j + round) % principalTargets.length;
    const [, port, pids] = principalTargets[i];
    samples[i].push(await throughput(port, pids, round === 0));
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const medianOf = (rounds) => {
  const cpuMedian = (key) =>
    Object.fromEntries(Object.keys(rounds[0][key]).map((k) => [k, median(rounds.map((r) => r[key][k]))]));
  return {
    get: median(rounds.map((r) => r.get)),
    set: median(rounds.map((r) => r.set)),
    getP: median(rounds.map((r) => r.getP)),
    setP: median(rounds.map((r) => r.setP)),
    cpu: cpuMedian('cpu'),
    cpuP: cpuMedian('cpuP'),
  };
};
const results = principalTargets.map(([name], i) => [name, medianOf(samples[i])]);

// Pinned: the principal Redis and redis-benchmark on one core, the proxy under test alone on the
// other. Unpinned, four busy processes share two cores and a target's ops/s moves with whatever
// else the VM is doing; pinned, the CPU one proxy spends per operation is read on its own, which
// is what "as fast as twemproxy" comes down to. The Node floor's row says what any Node process
// spends forwarding the same traffic. BENCH_PINNED=0 skips it.
function tasksetBinary() {
  try {
    return findBinary('taskset', 'apt-get install util-linux');
  } catch (err) {
    console.error(`pinned rows skipped: ${err.message}`);
    return undefined;
  }
}
const taskset =
  PART === 'agent' || process.env.BENCH_PINNED === '0' || os.cpus().length < 2 ? undefined : tasksetBinary();
const pinnedTargets =
  taskset === undefined ? [] : principalTargets.filter(([, , pids]) => Object.keys(pids).length > 0);
const pinned = pinnedTargets.map(() => []);
if (pinnedTargets.length > 0) {
  const everyCpu = `0-${os.cpus().length - 1}`;
  const info = await run('redis-cli', ['-p', String(principal.port), 'INFO', 'server']);
  const redisPid = Number(/process_id:(\d+)/.exec(info.stdout)?.[1]);
  // -a: every thread of the process (V8's and libuv's too).
  const pin = (pid, cpus) => run(taskset, ['-a', '-p', '-c', cpus, String(pid)]);
  const pinnedGetSet = async (port, pids) => {
    const r = await cpuOver(pids, () =>
      benchmark(port, ['-t', 'get,set', '-c', '50', '-n', String(N), '-r', '100000'], { taskset, core: '0' }),
    );
    return { get: r.result.GET.rps, set: r.result.SET.rps, cpu: Object.values(r.perOp(2 * N))[0] };
  };
  await pin(redisPid, '0');
  for (const [, , pids] of pinnedTargets) await pin(Object.values(pids)[0], '1');
  try {
    for (let round = 0; round < ROUNDS; round++)
      for (let j = 0; j < pinnedTargets.length; j++) {
        const i = (j + round) % pinnedTargets.length;
        const [, port, pids] = pinnedTargets[i];
        pinned[i].push(await pinnedGetSet(port, pids));
      }
  } finally {
    // Everything runs on every core again for the agent-key part.
    await pin(redisPid, everyCpu);
    for (const [, , pids] of pinnedTargets) await pin(Object.values(pids)[0], everyCpu);
  }
}
const pinnedResults = pinnedTargets.map(([name], i) => [
  name,
  {
    get: median(pinned[i].map((r) => r.get)),
    set: median(pinned[i].map((r) => r.set)),
    cpu: median(pinned[i].map((r) => r.cpu)),
  },
]);

// Agent keys: a 4 KiB value and a 1 MiB gzip value (what Argo CD stores for a large app's
// managed resources), at 1, 8 and 50 clients, directly on the agent's Redis and through
// proxy → gateway → agent.
const directKey = (k) => k.replace('bench-agent_', '');
const bigKey = 'app|managed-resources|bench-agent_big|1.8.3.gz';
{
  // Incompressible bytes gzipped: about 1 MiB of gzip, as a real managed-resources value.
  const big = gzipSync(randomBytes(1024 * 1024 - 256));
  const viaProxy = new Redis({ port: proxyPort, lazyConnect: true, maxRetriesPerRequest: 0 });
  const direct = new Redis({ port: agentRedis.port, lazyConnect: true, maxRetriesPerRequest: 0 });
  await Promise.all([viaProxy.connect(), direct.connect()]);
  await viaProxy.set(bigKey, big);
  if (!(await direct.getBuffer(directKey(bigKey)))?.equals(big))
    throw new Error('the 1 MiB value did not arrive');
  viaProxy.disconnect();
  direct.disconnect();
}
const agentRows = [];
for (const [label, key, n] of PART === 'principal'
  ? []
  : [
      ['4 KiB', agentKey, N_LATENCY, '4k'],
      ['1 MiB gzip', bigKey, Math.max(200, Math.round(N_LATENCY / 20)), '1m'],
    ].filter((row) => !VALUES || VALUES.includes(row[3]))) {
  for (const clients of CLIENTS) {
    const get = async (port, k) =>
      Object.values(
        await benchmark(port, ['-c', String(clients), '-n', String(n), '--precision', '3', 'GET', k]),
      )[0];
    // A cell that fails (e.g. the proxy's request timeout) is reported, not fatal.
    const attempt = (port, k) =>
      get(port, k).catch((err) => ({
        error: String(err.stderr ?? err.message)
          .trim()
          .split('\n')
          .at(-1),
      }));
    await attempt(proxyPort, key); // warm-up
    const d = await attempt(agentRedis.port, directKey(key));
    const proxied = await cpuOver({ proxy: proxy.pid, gateway: gateway.pid, agent: agent.pid }, () =>
      attempt(proxyPort, key),
    );
    agentRows.push({ label, clients, d, p: proxied.result, cpu: proxied.perOp(n) });
  }
}

// ---- report ------------------------------------------------------------------------------
const k = (x) => `${Math.round(x / 1000)}k`;
const lines = [];
lines.push(
  `redis-benchmark -c 50, ${N} requests (${N_PIPELINED} with -P 16), random keys, 3-byte values; ops/s, median of ${ROUNDS} round(s)`,
);
lines.push('');
const us = (cpu) =>
  Object.entries(cpu)
    .map(([name, v]) => `${name} ${v.toFixed(1)}`)
    .join(' · ') || '—';
lines.push('| target | GET | SET | GET -P 16 | SET -P 16 | CPU µs per op, plain / -P 16 |');
lines.push('| --- | ---: | ---: | ---: | ---: | --- |');
for (const [name, r] of results)
  lines.push(
    `| ${name} | ${k(r.get)} | ${k(r.set)} | ${k(r.getP)} | ${k(r.setP)} | ${us(r.cpu)} / ${us(r.cpuP)} |`,
  );
const twem = results.find(([n]) => n.startsWith('twemproxy'))?.[1];
const naiveRow = results.find(([n]) => n.startsWith('naive'))?.[1];
const ratioOf = (name, base) => {
  const p = results[1][1];
  const pct = (a, b) => `${Math.round((a / b) * 100)}%`;
  const cpu = (r) => Object.values(r.cpu)[0];
  lines.push(
    `| proxy / ${name} | ${pct(p.get, base.get)} | ${pct(p.set, base.set)} | ${pct(p.getP, base.getP)} | ${pct(p.setP, base.setP)} | CPU ${(cpu(p) / cpu(base)).toFixed(2)}× |`,
  );
};
if (twem) ratioOf('twemproxy', twem);
const floorRow = results.find(([n]) => n.startsWith('Node floor'))?.[1];
if (floorRow) ratioOf('Node floor', floorRow);
if (naiveRow) ratioOf('naive Node forwarder', naiveRow);
if (pinnedResults.length > 0) {
  lines.push('');
  lines.push(
    `Pinned: the principal Redis and redis-benchmark on CPU 0, the target alone on CPU 1; GET and SET, 50 clients, ${N} each; medians of ${ROUNDS} round(s)`,
  );
  lines.push('');
  lines.push('| target | GET | SET | CPU µs per op | CPU per op / twemproxy |');
  lines.push('| --- | ---: | ---: | ---: | ---: |');
  const twemPinned = pinnedResults.find(([n]) => n.startsWith('twemproxy'))?.[1];
  for (const [name, r] of pinnedResults)
    lines.push(
      `| ${name} | ${k(r.get)} | ${k(r.set)} | ${r.cpu.toFixed(2)} | ${twemPinned ? `${(r.cpu / twemPinned.cpu).toFixed(2)}×` : '—'} |`,
    );
}
lines.push('');
lines.push(`Agent-key GET (${N_LATENCY} requests for 4 KiB, fewer for 1 MiB); latency in ms`);
lines.push('');
lines.push(
  '| value | clients | direct p50 | proxied p50 | added p50 | direct p99 | proxied p99 | direct ops/s | proxied ops/s | proxied/direct | CPU µs per op |',
);
lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
const f = (x) => x.toFixed(3);
for (const { label, clients, d, p, cpu } of agentRows) {
  if (d.error || p.error) {
    lines.push(`| ${label} | ${clients} | failed: ${d.error ?? p.error} | | | | | | | | |`);
    continue;
  }
  lines.push(
    `| ${label} | ${clients} | ${f(d.p50)} | ${f(p.p50)} | ${f(p.p50 - d.p50)} | ${f(d.p99)} | ${f(p.p99)} | ${Math.round(d.rps)} | ${Math.round(p.rps)} | ${(p.rps / d.rps).toFixed(2)}× | ${us(cpu)} |`,
  );
}
// The targets, from the rows above.
lines.push('');
lines.push('| target | measured | |');
lines.push('| --- | --- | --- |');
const verdict = (ok, by) => (ok ? 'met' : `**missed, ${by}**`);
if (twem) {
  const p = results[1][1];
  for (const [name, key] of [
    ['GET', 'get'],
    ['SET', 'set'],
    ['GET -P 16', 'getP'],
    ['SET -P 16', 'setP'],
  ]) {
    const ratio = p[key] / twem[key];
    lines.push(
      `| principal ${name} ≥ 1.0× twemproxy | ${ratio.toFixed(2)}× | ${verdict(ratio >= 1, `by ${Math.round((1 - ratio) * 100)} %`)} |`,
    );
  }
}
const agent8 = agentRows.find((r) => r.label === '4 KiB' && r.clients === 8);
if (agent8 && !agent8.d.error && !agent8.p.error) {
  const added = agent8.p.p50 - agent8.d.p50;
  lines.push(
    `| agent-key GET 4 KiB, 8 clients ≥ 10,000 ops/s | ${Math.round(agent8.p.rps)} | ${verdict(agent8.p.rps >= 10_000, `${(10_000 / agent8.p.rps).toFixed(1)}×`)} |`,
  );
  lines.push(
    `| agent-key GET 4 KiB, 8 clients ≤ 0.5 ms added p50 | ${f(added)} ms | ${verdict(added <= 0.5, `by ${f(added - 0.5)} ms`)} |`,
  );
}
console.log(lines.join('\n'));

await stopAll([...children]);
await Promise.all([principal.stop(), agentRedis.stop(), nats.stop()]);
process.exit(0);
