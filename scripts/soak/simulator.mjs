// The soak's simulator process: N real agents (libs/testing/simulator), each with its own
// simulated cluster and the redis executor on one shared Redis, dialling the gateways through
// the balancer. It changes a watched Deployment on a few agents and appends log lines to a few
// pods at a steady pace, remembering every change it made, and stops/starts agents on request
// (flapping). Driven over IPC by scripts/soak/soak.mjs; not a test.
import { readFileSync } from 'node:fs';
import { RedisExecutor } from '@pullplane/agent-core';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { startFleet } from '@pullplane/simulator';
import pino from 'pino';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const logger = pino({ level: 'warn' }, pino.destination(1));
const ca = readFileSync(cfg.caFile);
const executors = new Map(
  cfg.names.map((name) => [
    name,
    new RedisExecutor({ agentName: name, endpoint: cfg.redis, logger: logger.child({ agent: name }) }),
  ]),
);
const fleet = await startFleet({
  names: cfg.names,
  target: cfg.target,
  clusters: 'per-agent',
  heartbeatIntervalMs: cfg.heartbeatMs,
  // Each simulated cluster keeps its last 50 requests and 300 changes (150 s of the watched
  // Deployment's at the emit pace): bounded, so the simulator's memory is judged on its agents.
  clusterMemory: { maxRequestLog: 50, historySize: 300 },
  logger,
  handlersFor: (name) => ({ redis: (s) => executors.get(name).handle(s) }),
  credentialsFor: async (name) => {
    const c = cfg.certs[name];
    return {
      credentials: tunnelCredentials.tls(ca, Buffer.from(c.key), Buffer.from(c.cert)),
      serverNameOverride: 'localhost',
    };
  },
});
await fleet.connected(cfg.connectTimeoutMs);
const byName = new Map(fleet.agents.map((a) => [a.name, a]));

const DEPLOYMENT = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'demo', name: 'guestbook' };
const podOf = (a) =>
  a.cluster.store
    .list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
    .filter((p) => p.metadata.name.startsWith('guestbook-')) // managed through its owners
    .map((p) => p.metadata.name)
    .sort()[0];
const pods = Object.fromEntries(fleet.agents.map((a) => [a.name, podOf(a)]));
const rvs = Object.fromEntries(
  fleet.agents.map((a) => [a.name, a.cluster.store.get(DEPLOYMENT).metadata.resourceVersion]),
);

/** agent → resourceVersions of the Deployment changes this process made, in order. */
const emitted = new Map(cfg.watched.map((n) => [n, []]));
const logLines = new Map(cfg.logged.map((n) => [n, 0]));
let seq = 0;
let ticker;
const tick = () => {
  seq++;
  for (const [name, list] of emitted) {
    const obj = byName.get(name).cluster.store.update(DEPLOYMENT, (o) => {
      o.metadata.annotations = { ...o.metadata.annotations, 'soak/seq': String(seq) };
    });
    list.push(obj.metadata.resourceVersion);
  }
  for (const [name, n] of logLines) {
    byName.get(name).cluster.store.appendPodLog('demo', pods[name], `soak line ${n + 1}`);
    logLines.set(name, n + 1);
  }
};

process.on('message', async (msg) => {
  if (msg.cmd === 'emit') ticker ??= setInterval(tick, msg.intervalMs);
  else if (msg.cmd === 'stop-emit') {
    clearInterval(ticker);
    ticker = undefined;
  } else if (msg.cmd === 'agent-stop') await byName.get(msg.name).agent.stop();
  else if (msg.cmd === 'agent-start') byName.get(msg.name).agent.start();
  else if (msg.cmd === 'heap') {
    // Live memory after a full collection (forked with --expose-gc): what its agents and
    // clusters hold, apart from what the allocator keeps after a peak.
    globalThis.gc?.();
    const m = process.memoryUsage();
    process.send({ id: msg.id, heapUsed: m.heapUsed, external: m.external, rss: m.rss });
  } else if (msg.cmd === 'emitted')
    process.send({
      id: msg.id,
      emitted: Object.fromEntries(emitted),
      logLines: Object.fromEntries(logLines),
    });
  else if (msg.cmd === 'shutdown') {
    clearInterval(ticker);
    await fleet.stop();
    await Promise.all([...executors.values()].map((e) => e.stop()));
    process.send({ id: msg.id, done: true });
    process.exit(0);
  }
});
process.send({ ready: true, pods, rvs });
