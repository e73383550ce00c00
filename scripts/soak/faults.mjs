// The soak's faults, on a schedule proportional to the run's length: kill -9 of each gateway in
// turn, of a resource proxy and a redis proxy replica, of one NATS node (two of three keep
// quorum), a full NATS restart; each killed process is started again as its pod would be. One
// agent flaps (stops and starts) every few seconds through the middle of the run.

/** When each fault happens, as a fraction of the run. */
export const SCHEDULE = {
  disconnectsFrom: 0.1,
  flapFrom: 0.15,
  faults: [
    { at: 0.15, kind: 'gateway', index: 0 },
    { at: 0.27, kind: 'gateway', index: 1 },
    { at: 0.39, kind: 'resource-proxy', index: 0 },
    { at: 0.45, kind: 'redis-proxy', index: 1 },
    { at: 0.51, kind: 'nats-node', index: 1 },
    { at: 0.63, kind: 'nats-restart' },
  ],
  flapUntil: 0.75,
  disconnectsUntil: 0.8,
  /** Resources' baseline is measured from here to the first fault. */
  baseline: [0.05, 0.15],
};

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The agents a gateway holds, from the gateways' own logs: each agent is where it last logged
 * "agent connected". Read here rather than asked of the simulator, whose answer would queue
 * behind the load it is serving.
 */
function agentsOn(gateways, target) {
  const latest = new Map();
  for (const gw of gateways) {
    for (const l of gw.current?.lines() ?? []) {
      if (l.msg !== 'agent connected') continue;
      const prev = latest.get(l.agent);
      if (!prev || l.time >= prev.time) latest.set(l.agent, { time: l.time, gw });
    }
  }
  return [...latest].filter(([, v]) => v.gw === target).map(([agent]) => agent);
}

/**
 * Runs the faults in order, each at its time or as soon as the one before has recovered its
 * process, and returns `[{ name, at, agents? }]` for the failure windows (agents: those the
 * fault can affect; the flapping agent is never counted against another fault).
 */
export async function runFaults({ topo, durationMs, t0, log, flapper, restartDelayMs }) {
  const done = [];
  const everyone = topo.names.filter((n) => n !== flapper);
  for (const f of SCHEDULE.faults) {
    const due = t0 + f.at * durationMs;
    if (Date.now() < due) await wait(due - Date.now());
    const at = Date.now();
    if (f.kind === 'gateway') {
      const gw = topo.gateways[f.index];
      const agents = agentsOn(topo.gateways, gw).filter((n) => n !== flapper);
      await gw.kill();
      log(`fault: kill -9 ${gw.name} (${agents.length} agents on it)`);
      done.push({ name: `kill -9 ${gw.name}`, at, agents });
      await wait(restartDelayMs);
      await gw.start();
      log(`${gw.name} restarted`);
    } else if (f.kind === 'resource-proxy' || f.kind === 'redis-proxy') {
      const p = (f.kind === 'resource-proxy' ? topo.resourceProxies : topo.redisProxies)[f.index];
      await p.kill();
      log(`fault: kill -9 ${p.name}`);
      done.push({ name: `kill -9 ${p.name}`, at, agents: everyone });
      await wait(restartDelayMs);
      await p.start();
      log(`${p.name} restarted`);
    } else if (f.kind === 'nats-node') {
      const node = topo.nats.nodes[f.index];
      await node.kill();
      log(`fault: kill -9 NATS node ${f.index + 1} of 3`);
      done.push({ name: `kill -9 NATS node ${f.index + 1}/3`, at, agents: everyone });
      await wait(restartDelayMs * 2);
      await node.restart();
      await topo.nats.ready();
      log('NATS node restarted');
    } else if (f.kind === 'nats-restart') {
      log('fault: full NATS restart');
      done.push({ name: 'NATS full restart', at, agents: everyone });
      await topo.nats.restart();
      log('NATS cluster back');
    }
  }
  return done;
}

/** Stops and starts `agent` every `periodMs` until `untilMs` (epoch); resolves with the flaps. */
export async function flap({ sim, agent, periodMs, untilMs }) {
  let flaps = 0;
  while (Date.now() + periodMs < untilMs) {
    sim.send({ cmd: 'agent-stop', name: agent });
    await wait(periodMs / 2);
    sim.send({ cmd: 'agent-start', name: agent });
    flaps++;
    await wait(periodMs / 2);
  }
  return flaps;
}
