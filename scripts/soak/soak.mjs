// npm run soak [-- --quick] [--agents N] [--rate R] [--duration S] [--json FILE]
//
// The system under sustained mixed load with faults injected, on one machine: a 3-node NATS
// JetStream cluster, two gateways, two resource proxies, two redis proxies (built apps), the
// principal Redis, and the simulator's agents (each with a simulated cluster, all on one shared
// Redis) dialling the gateways through a TCP balancer. Prints a report (and writes it as JSON
// with --json); exits 1 when a request hung or a process's RSS or descriptors did not come back.
// Not a test: `npm test` runs only the report's arithmetic (scripts/test/soak-report.test.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Redis from 'ioredis';
import { flap, runFaults, SCHEDULE } from './faults.mjs';
import { createLoad, localAgentKey } from './load.mjs';
import { parseSoakArgs } from './options.mjs';
import { pidOf, startSampler } from './sampler.mjs';
import { buildReport, formatReport } from './summary.mjs';
import { startSimulator, startTopology, writeJson } from './topology.mjs';

const settings = parseSoakArgs(process.argv.slice(2));
if (settings instanceof Error) {
  console.error(settings.message);
  process.exit(2);
}
const { agents, rate, durationMs, deadlineMs } = settings;

const started = Date.now();
const log = (m) => console.error(`[soak +${((Date.now() - started) / 1000).toFixed(1)}s] ${m}`);
const heartbeatMs = 10_000;
const topo = await startTopology({ agents, requestTimeout: deadlineMs, log });
const nWatched = Math.min(settings.watches, agents - 2);
const watched = topo.names.slice(0, nWatched);
const logged = topo.names.slice(0, Math.min(10, nWatched));
const flapper = topo.names.at(-1);
const sim = await startSimulator(topo, { watched, logged, heartbeatMs, log });
log(`${agents} agents connected`);

// Each agent's key in the shared agent Redis, as the agent's executor will look it up.
const seed = new Redis({ host: '127.0.0.1', port: topo.agentRedis.port });
await seed.mset(...topo.names.flatMap((n) => [localAgentKey(n), n]));
seed.disconnect();

const processes = [
  ...[...topo.gateways, ...topo.resourceProxies, ...topo.redisProxies].map((a) => ({
    name: a.name,
    pid: () => a.pid,
    app: a,
  })),
  ...topo.nats.nodes.map((n, i) => ({ name: `nats-${i + 1}`, pid: pidOf(['nats-server', String(n.port)]) })),
  { name: 'redis-principal', pid: pidOf(['redis-server', `:${topo.principalRedis.port}`]) },
  { name: 'redis-agents', pid: pidOf(['redis-server', `:${topo.agentRedis.port}`]) },
  { name: 'simulator', pid: () => sim.pid },
  { name: 'balancers', pid: () => topo.balancers.pid },
];
const sampler = startSampler(processes);
// The balancers run in this process: a blocked event loop here would look like a slow system.
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
const load = createLoad({ topo, sim, rate, deadlineMs, watched, logged, flapper });
const unanswered = await load.warmUp(120_000);
log(`warm-up: ${agents - unanswered} of ${agents} agents answered through the proxies`);
const t0 = Date.now();
const loadAtStart = os.loadavg()[0];
sim.send({ cmd: 'emit', intervalMs: 500 });
load.start();
log(`load: ${rate} req/s for ${durationMs / 1000} s, ${watched.length} watches, ${logged.length} logs -f`);
const at = (fraction) => t0 + fraction * durationMs;
const sleepUntil = (t) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));

const restartDelayMs = settings.quick ? 2_000 : 5_000;
// The simulator's live memory after a full collection, just before the first fault and at the end.
const heapBefore = sleepUntil(at(SCHEDULE.faults[0].at) - 1_000).then(() => sim.ask({ cmd: 'heap' }));
const [faults, flaps] = await Promise.all([
  runFaults({ topo, durationMs, t0, log, flapper, restartDelayMs }),
  sleepUntil(at(SCHEDULE.flapFrom)).then(() =>
    flap({ sim, agent: flapper, periodMs: 3_000, untilMs: at(SCHEDULE.flapUntil) }),
  ),
  sleepUntil(at(SCHEDULE.disconnectsFrom)).then(() => {
    load.startDisconnects();
    return sleepUntil(at(SCHEDULE.disconnectsUntil)).then(() => load.stopDisconnects());
  }),
]);
// A quiet tail after the last fault (at least a quarter of the run) shows what comes back.
const faultsDone = Date.now();
await sleepUntil(Math.max(at(1), faultsDone + 0.25 * durationMs));
const loadEnd = Date.now();
sim.send({ cmd: 'stop-emit' });
log('load done; letting watches catch up');
await new Promise((r) => setTimeout(r, 2_000));
const { emitted, logLines } = await sim.ask({ cmd: 'emitted' });
const simulatorHeap = { before: await heapBefore, end: await sim.ask({ cmd: 'heap' }) };
await load.stop();
sampler.stop();

let commit = 'unknown';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
} catch {
  // not a checkout
}
const logsOf = Object.fromEntries([
  ...[...topo.gateways, ...topo.resourceProxies, ...topo.redisProxies].map((a) => [
    a.name,
    a.generations.flatMap((g) => g.logs),
  ]),
  ['simulator', sim.logs],
]);
const report = buildReport({
  meta: {
    date: new Date(t0).toISOString(),
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}, load average ${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end`,
    commit,
    agents,
    rate,
    durationS: durationMs / 1000,
    deadlineMs,
    flapper,
    flaps,
    startupS: Math.round((t0 - started) / 1000),
    soakLoopDelayMs: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
  },
  load,
  faults,
  window: {
    loadEnd,
    // Resources: before the first fault, and over the second half of the quiet tail.
    baseline: { from: at(SCHEDULE.baseline[0]), to: faults[0]?.at ?? at(SCHEDULE.baseline[1]) },
    final: { from: faultsDone + (loadEnd - faultsDone) / 2, to: loadEnd },
  },
  emitted,
  logLines,
  samples: sampler.samples,
  logsOf,
  simulatorHeap,
});
console.log(formatReport(report));
if (settings.json) writeJson(settings.json, report);
// Every request record and every process's log, for digging into what the report only counts.
if (process.env.SOAK_RECORDS) writeJson(process.env.SOAK_RECORDS, { t0, faults, records: load.records });
if (process.env.SOAK_LOGS) {
  mkdirSync(process.env.SOAK_LOGS, { recursive: true });
  for (const [name, lines] of Object.entries(logsOf))
    writeFileSync(path.join(process.env.SOAK_LOGS, `${name}.log`), `${lines.join('\n')}\n`);
}

log(`stopping; the whole run took ${((Date.now() - started) / 1000).toFixed(0)} s`);
await sim.ask({ cmd: 'shutdown' }).catch(() => undefined);
await topo.close().catch(() => undefined);
process.exit(report.verdict.pass ? 0 : 1);
