// The soak's processes: a 3-node NATS JetStream cluster, principal and agent Redis, two
// gateways, two resource proxies and two redis proxies (built apps, mTLS on every hop), a TCP
// balancer in front of each pair, and the simulator process. Each app can be killed (-9) and
// started again on the same ports, as a restarted pod behind its Service.
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CALLER_TOKEN_AUDIENCE, TokenAuthority } from '@pullplane/auth';
import { issueCertificate } from '@pullplane/pki';
import { freePort, spawnAppProcess, startNatsCluster, startRedisServer } from '@pullplane/testing';
import { benchPki, root } from '../bench/processes.mjs';
import { startScriptOf } from '../start-command.mjs';

const apps = new Set();
process.on('exit', () => {
  for (const a of apps) a.child.kill('SIGKILL');
});

/**
 * One app of the topology under a stable name: `start()` spawns it (again) with the same
 * flags and ports, `kill()` sends SIGKILL. Every generation's output is kept for the report.
 */
function managedApp(name, app, args, readyMsg) {
  const generations = [];
  const self = {
    name,
    generations,
    get current() {
      return generations.at(-1);
    },
    get pid() {
      return self.current?.child.pid;
    },
    async start() {
      // With the Node.js options of the app's start command, as its image runs it.
      const p = spawnAppProcess(app, args, {}, startScriptOf(app)?.nodeOptions ?? []);
      apps.add(p);
      void p.exited.then(() => apps.delete(p));
      generations.push(p);
      // Generous: on a loaded machine a node process can take a minute just to load its modules.
      await p.waitForLine((l) => l.msg === readyMsg, 300_000);
      return p;
    },
    async kill() {
      const p = self.current;
      if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
      p.child.kill('SIGKILL');
      await p.exited;
    },
    async stop() {
      await self.current?.stop(5_000);
    },
  };
  return self;
}

export async function startTopology({ agents, requestTimeout, log }) {
  const pki = await benchPki('soak-', 'resource-proxy');
  const { file, ca, caFile } = pki;
  const tlsCrt = pki.tlsCrt;
  const tlsKey = pki.tlsKey;
  const redisProxyCert = await issueCertificate(ca, {
    commonName: 'redis-proxy',
    usage: 'client',
    kind: 'proxy',
  });
  const names = Array.from({ length: agents }, (_, i) => `soak-${i + 1}`);
  log(`issuing ${agents} agent certificates`);
  const certs = {};
  for (const n of names) {
    const c = await issueCertificate(ca, { commonName: n, usage: 'client', kind: 'agent' });
    certs[n] = { cert: c.certPem, key: c.keyPem };
  }
  const callers = await TokenAuthority.generate({ audience: CALLER_TOKEN_AUDIENCE });
  const tokens = new Map();
  for (const n of names) tokens.set(n, await callers.issue(n, { ttlSeconds: 24 * 3600 }));

  log('starting NATS (3 nodes), principal and agent Redis');
  const nats = await startNatsCluster({ name: 'soak' });
  const principalRedis = await startRedisServer();
  const agentRedis = await startRedisServer();

  const gatewayPorts = await Promise.all([0, 1].map(async () => [await freePort(), await freePort()]));
  const gateways = gatewayPorts.map(([agentPort, internalPort], i) =>
    managedApp(
      `gateway-${i + 1}`,
      'stream-gateway',
      [
        '--listen-host=127.0.0.1',
        `--listen-port=${agentPort}`,
        `--internal-listen-port=${internalPort}`,
        '--advertise-address=127.0.0.1',
        `--nats-url=${nats.urls}`,
        '--nats-insecure',
        '--presence-replicas=3',
        `--tls-cert=${tlsCrt}`,
        `--tls-key=${tlsKey}`,
        `--root-ca-path=${caFile}`,
        '--metrics-port=0',
        '--healthz-port=0',
        '--drain-timeout=2s',
      ],
      'stream gateway started',
    ),
  );
  log('starting 2 gateways');
  await Promise.all(gateways.map((g) => g.start()));

  const proxyCommon = (prefix, certPem, keyPem) => [
    `--nats-url=${nats.urls}`,
    '--nats-insecure',
    `--gateway-cert-path=${file(`${prefix}.crt`, certPem)}`,
    `--gateway-key-path=${file(`${prefix}.key`, keyPem)}`,
    `--gateway-ca-path=${caFile}`,
    '--gateway-server-name=localhost',
    '--metrics-port=0',
    '--healthz-port=0',
    `--request-timeout=${requestTimeout / 1000}s`,
    '--drain-timeout=2s',
  ];
  const callerKey = file('callers.key', callers.exportPrivateKeyPem());
  const resourcePorts = [await freePort(), await freePort()];
  const resourceProxies = resourcePorts.map((port, i) =>
    managedApp(
      `resource-proxy-${i + 1}`,
      'resource-proxy',
      [
        '--listen-host=127.0.0.1',
        `--listen-port=${port}`,
        `--resource-proxy-cert-path=${tlsCrt}`,
        `--resource-proxy-key-path=${tlsKey}`,
        `--resource-proxy-ca-path=${caFile}`,
        `--token-key-path=${callerKey}`,
        ...proxyCommon('resource-proxy', pki.proxyCert.certPem, pki.proxyCert.keyPem),
      ],
      'resource-proxy started',
    ),
  );
  const redisPorts = [await freePort(), await freePort()];
  const redisProxies = redisPorts.map((port, i) =>
    managedApp(
      `redis-proxy-${i + 1}`,
      'redis-proxy',
      [
        '--listen-host=127.0.0.1',
        `--listen-port=${port}`,
        `--redis-server-address=127.0.0.1:${principalRedis.port}`,
        ...proxyCommon('redis-proxy', redisProxyCert.certPem, redisProxyCert.keyPem),
      ],
      'redis-proxy started',
    ),
  );
  log('starting 2 resource proxies and 2 redis proxies');
  await Promise.all([...resourceProxies, ...redisProxies].map((p) => p.start()));
  const balancers = await startBalancers({
    agents: gatewayPorts.map(([p]) => `127.0.0.1:${p}`),
    resource: resourcePorts.map((p) => `127.0.0.1:${p}`),
    redis: redisPorts.map((p) => `127.0.0.1:${p}`),
  });
  const at = (port) => ({ port, address: `127.0.0.1:${port}` });
  const agentBalancer = at(balancers.ports.agents);
  const resourceBalancer = at(balancers.ports.resource);
  const redisBalancer = at(balancers.ports.redis);
  return {
    pki,
    names,
    certs,
    tokens,
    nats,
    principalRedis,
    agentRedis,
    gateways,
    resourceProxies,
    redisProxies,
    agentBalancer,
    resourceBalancer,
    redisBalancer,
    balancers,
    async close() {
      await Promise.all([...resourceProxies, ...redisProxies].map((p) => p.stop()));
      await Promise.all(gateways.map((g) => g.stop()));
      balancers.child.kill('SIGTERM');
      await nats.stop();
      await principalRedis.stop();
      await agentRedis.stop();
    },
  };
}

/** Forks scripts/soak/balancers.mjs: one balancer per `{ name: backends }`; resolves with their ports. */
async function startBalancers(pairs) {
  const child = fork(path.join(root, 'scripts/soak/balancers.mjs'), [JSON.stringify(pairs)], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  apps.add({ child });
  const ports = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out));
    });
    child.once('exit', (code) => reject(new Error(`balancers exited (${code})`)));
  });
  return { child, ports, name: 'balancers', pid: child.pid };
}

/**
 * Forks the simulator (scripts/soak/simulator.mjs) and resolves once every agent holds a tunnel;
 * `ask(cmd)` sends a command and waits for its answer, `send(cmd)` does not wait.
 */
export async function startSimulator(topo, { watched, logged, heartbeatMs, log }) {
  const cfgFile = topo.pki.file(
    'simulator.json',
    JSON.stringify({
      names: topo.names,
      certs: topo.certs,
      caFile: topo.pki.caFile,
      target: topo.agentBalancer.address,
      redis: { host: '127.0.0.1', port: topo.agentRedis.port },
      heartbeatMs,
      watched,
      logged,
      connectTimeoutMs: 600_000,
    }),
  );
  log(`starting the simulator: ${topo.names.length} agents, each with a simulated cluster`);
  const child = fork(path.join(root, 'scripts/soak/simulator.mjs'), [cfgFile], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    execArgv: ['--expose-gc'],
  });
  apps.add({ child });
  const logs = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      logs.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  child.stderr.on('data', (d) => logs.push(...d.toString().split('\n').filter(Boolean)));
  const pending = new Map();
  let nextId = 1;
  const ready = new Promise((resolve, reject) => {
    child.on('message', (m) => {
      if (m.ready) resolve(m);
      else if (m.id && pending.has(m.id)) {
        pending.get(m.id)(m);
        pending.delete(m.id);
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`simulator exited (${code}):\n${logs.slice(-30).join('\n')}`)),
    );
  });
  const { pods, rvs } = await ready;
  return {
    name: 'simulator',
    child,
    logs,
    pods,
    rvs,
    get pid() {
      return child.pid;
    },
    send: (cmd) => child.send(cmd),
    ask: (cmd) =>
      new Promise((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        child.send({ ...cmd, id });
      }),
  };
}

export function writeJson(file, value) {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}
