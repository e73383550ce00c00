// The soak's load: named GETs, LISTs and redis GETs at a fixed rate (open loop: a slow answer
// never slows the offered load), watches held open and resumed from their last
// resourceVersion, `logs -f` followers, redis pub/sub, a watch reader that stops reading and
// clients that disconnect mid-body. Every request is recorded with its deadline for the report.

import { readFileSync } from 'node:fs';
import https from 'node:https';
import Redis from 'ioredis';

/** A request still unanswered this long after its deadline is given up on (and is a hang). */
const GIVE_UP_AFTER_MS = 5_000;
/**
 * Fixed-rate requests kept in flight at most, HTTP (one keep-alive connection each, so no
 * request waits for a connection or pays a handshake) and redis: beyond it a request is not sent
 * but counted as shed, so a system that stops answering cannot drown the load generator (and
 * with it the measurement) in connections; the report shows how many were shed.
 */
const MAX_HTTP_IN_FLIGHT = 128;
const MAX_REDIS_IN_FLIGHT = 1_000;
const CHANNEL = 'soak-pubsub';
export const agentKey = (agent) => `app|managed-resources|${agent}_${agent}-state`;
/** The key as the agent's own Redis knows it (the proxy cuts `<agent>_` out). */
export const localAgentKey = (agent) => `app|managed-resources|${agent}-state`;

export function createLoad({ topo, sim, rate, deadlineMs, watched, logged, flapper }) {
  const records = [];
  const shed = {};
  const inFlight = { http: 0, redis: 0 };
  const admit = (kind) => {
    const redis = kind === 'redis';
    if ((redis ? inFlight.redis : inFlight.http) < (redis ? MAX_REDIS_IN_FLIGHT : MAX_HTTP_IN_FLIGHT))
      return true;
    shed[kind] = (shed[kind] ?? 0) + 1;
    return false;
  };
  const FIXED_RATE = new Set(['get', 'list']);
  const ca = readFileSync(topo.pki.caFile);
  // Fixed-rate requests: as many connections as they may have in flight, so none waits for one.
  const httpAgent = new https.Agent({
    keepAlive: true,
    maxSockets: MAX_HTTP_IN_FLIGHT,
    maxFreeSockets: MAX_HTTP_IN_FLIGHT,
    ca,
  });
  // Watches, logs -f and the disconnecting clients hold their connections: a pool of their own.
  const streamAgent = new https.Agent({ keepAlive: true, ca });
  const port = topo.resourceBalancer.port;
  const names = topo.names;
  const timers = new Set();
  const closers = new Set();
  let running = true;
  const every = (ms, fn) => {
    const t = setInterval(fn, ms);
    timers.add(t);
    return t;
  };
  let disconnects;
  let offered = 0;

  /**
   * One HTTP request through the resource proxies. `onResponse(res, rec)` may take over the
   * body (streams); otherwise the body is drained and the record closed at its end.
   */
  function request(kind, agent, path, onResponse, onFailure) {
    const rec = { kind, agent, start: Date.now(), end: undefined, deadlineMs, outcome: 'failed' };
    records.push(rec);
    const counted = FIXED_RATE.has(kind);
    if (counted) inFlight.http++;
    const ac = new AbortController();
    const giveUp = setTimeout(() => ac.abort(new Error('gave up')), deadlineMs + GIVE_UP_AFTER_MS);
    const finish = (outcome, detail) => {
      if (rec.end !== undefined) return;
      clearTimeout(giveUp);
      if (counted) inFlight.http--;
      rec.end = Date.now();
      rec.outcome = outcome;
      if (detail) rec.detail = detail;
      if (outcome !== 'ok') onFailure?.();
    };
    const req = https.request(
      {
        agent: counted ? httpAgent : streamAgent,
        host: '127.0.0.1',
        port,
        path: `/clusters/${agent}${path}`,
        headers: { authorization: `Bearer ${topo.tokens.get(agent)}`, accept: 'application/json' },
        signal: ac.signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const outcome = status >= 200 && status < 300 ? 'ok' : status === 504 ? 'timeout' : 'failed';
        res.on('error', () => finish('failed', 'body aborted'));
        if (onResponse && outcome === 'ok') {
          onResponse(res, (o, d) => finish(o, d), ac);
          return;
        }
        res.resume();
        res.on('end', () => finish(outcome, outcome === 'ok' ? undefined : `HTTP ${status}`));
      },
    );
    req.on('error', (err) => finish('failed', err.message));
    req.end();
    return { rec, abort: () => ac.abort() };
  }

  // ---- watches, resumed from the last resourceVersion seen ----------------------------------
  const watches = new Map(
    watched.map((agent) => [
      agent,
      {
        fromRv: sim.rvs[agent],
        rv: sim.rvs[agent],
        seen: [],
        reconnects: 0,
        relists: 0,
        lastEvent: 0,
        maxGapMs: 0,
      },
    ]),
  );
  const DEPLOYMENTS = '/apis/apps/v1/namespaces/demo/deployments';
  function watch(agent) {
    if (!running) return;
    const w = watches.get(agent);
    const retry = () => {
      if (!running) return;
      w.reconnects++;
      setTimeout(() => watch(agent), 250);
    };
    const { abort } = request(
      'watch',
      agent,
      `${DEPLOYMENTS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=${w.rv}`,
      (res, done) => {
        done('ok'); // the head arrived: the watch is established
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          buf += chunk;
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.trim() === '') continue;
            const ev = JSON.parse(line);
            if (ev.type === 'ERROR') {
              if (ev.object?.code === 410) w.expired = true;
              continue;
            }
            const rv = ev.object?.metadata?.resourceVersion;
            if (!rv) continue;
            w.rv = rv;
            if (ev.type === 'MODIFIED' && ev.object.metadata.name === 'guestbook') {
              const now = Date.now();
              if (w.lastEvent) w.maxGapMs = Math.max(w.maxGapMs, now - w.lastEvent);
              w.lastEvent = now;
              w.seen.push(rv);
            }
          }
        });
        res.on('close', () => {
          closers.delete(abort);
          if (w.expired) {
            // History compacted past our version: list again, as a reflector would.
            w.expired = false;
            w.relists++;
            relist(agent).then(retry, retry);
          } else retry();
        });
      },
      retry,
    );
    closers.add(abort);
  }
  async function relist(agent) {
    const w = watches.get(agent);
    await new Promise((resolve) => {
      request(
        'list',
        agent,
        DEPLOYMENTS,
        (res, done) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => {
            done('ok');
            w.rv = JSON.parse(body).metadata.resourceVersion;
            resolve();
          });
          res.on('error', resolve);
        },
        resolve,
      );
    });
  }

  // ---- logs -f -------------------------------------------------------------------------------
  const follows = new Map(logged.map((agent) => [agent, { lines: new Set(), reconnects: 0 }]));
  function follow(agent) {
    if (!running) return;
    const f = follows.get(agent);
    const retry = () => {
      if (!running) return;
      f.reconnects++;
      setTimeout(() => follow(agent), 250);
    };
    const { abort } = request(
      'logs',
      agent,
      `/api/v1/namespaces/demo/pods/${sim.pods[agent]}/log?follow=true`,
      (res, done) => {
        done('ok');
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          buf += chunk;
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const m = /^soak line (\d+)$/.exec(buf.slice(0, i));
            if (m) f.lines.add(Number(m[1]));
            buf = buf.slice(i + 1);
          }
        });
        res.on('close', () => {
          closers.delete(abort);
          retry();
        });
      },
      retry,
    );
    closers.add(abort);
  }

  // ---- a reader that stops reading, and clients that leave mid-body ---------------------------
  let stuck;
  function startStuckReader(agent) {
    stuck = request(
      'watch-unread',
      agent,
      `${DEPLOYMENTS}?watch=1&resourceVersion=${sim.rvs[agent]}`,
      (res, done) => {
        done('ok');
        res.pause(); // and never resumed: the proxies must not hold the rest of the system for it
      },
    );
  }
  let flip = 0;
  function disconnectMidBody() {
    const agent = names[Math.floor(Math.random() * names.length)];
    const path =
      flip++ % 2 === 0
        ? '/api/v1/namespaces/demo/pods'
        : `/api/v1/namespaces/demo/pods/${sim.pods[agent]}/log?follow=true`;
    const r = request('disconnect', agent, path, (res, done, ac) => {
      done('ok');
      // Leaves mid-body: once the body has ended there is nothing left to leave, and aborting
      // then would destroy a socket already back in the keep-alive pool (an unhandled error).
      res.once('data', () => {
        if (!res.complete) ac.abort();
      });
      res.resume();
    });
    void r;
  }

  // ---- redis ---------------------------------------------------------------------------------
  const redisOpts = {
    host: '127.0.0.1',
    port: topo.redisBalancer.port,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 200,
    lazyConnect: false,
  };
  const redisClients = Array.from({ length: 8 }, () => new Redis(redisOpts));
  for (const c of redisClients) c.on('error', () => undefined);
  let nextClient = 0;
  function redisGet(agent) {
    const rec = { kind: 'redis', agent, start: Date.now(), end: undefined, deadlineMs, outcome: 'failed' };
    records.push(rec);
    inFlight.redis++;
    const client = redisClients[nextClient++ % redisClients.length];
    let giveUp;
    const finish = (outcome, detail) => {
      if (rec.end !== undefined) return;
      clearTimeout(giveUp);
      inFlight.redis--;
      rec.end = Date.now();
      rec.outcome = outcome;
      if (detail) rec.detail = detail;
    };
    giveUp = setTimeout(() => finish('failed', 'gave up'), deadlineMs + GIVE_UP_AFTER_MS);
    // An answer after giving up must not overwrite the verdict: finish() keeps the first.
    client.get(agentKey(agent)).then(
      (v) => finish(v === agent ? 'ok' : 'failed', v === agent ? undefined : `wrong value ${v}`),
      (err) => finish(/timed? ?out|timeout/i.test(err.message) ? 'timeout' : 'failed', err.message),
    );
  }
  // Pub/sub on a principal channel, through the proxies: one subscriber, one publisher.
  const published = [];
  const received = [];
  const intervals = [];
  const subscriber = new Redis({ ...redisOpts, autoResubscribe: false });
  subscriber.on('error', () => undefined);
  subscriber.on('ready', () => {
    subscriber.subscribe(CHANNEL).then(
      () => intervals.push({ from: Date.now(), to: undefined }),
      () => undefined,
    );
  });
  subscriber.on('close', () => {
    const open = intervals.at(-1);
    if (open && open.to === undefined) open.to = Date.now();
  });
  subscriber.on('message', (_channel, message) => received.push(Number(message)));
  const publisher = new Redis(redisOpts);
  publisher.on('error', () => undefined);
  let seq = 0;
  function publish() {
    const s = ++seq;
    const at = Date.now();
    publisher.publish(CHANNEL, String(s)).then(
      () => published.push({ seq: s, at }),
      () => undefined, // not published: nobody can have missed it
    );
  }

  // ---- the fixed-rate mix ----------------------------------------------------------------------
  function issue(i) {
    const agent = names[Math.floor(Math.random() * names.length)];
    const slot = i % 10;
    const kind = slot < 5 ? 'get' : slot < 7 ? 'list' : 'redis';
    if (!admit(kind)) return;
    if (kind === 'get') request('get', agent, `${DEPLOYMENTS}/guestbook`);
    else if (kind === 'list') request('list', agent, '/api/v1/namespaces/demo/pods');
    else redisGet(agent);
  }

  /**
   * Before the clock starts: every agent answers a named GET through the proxies (retrying
   * while presence spreads), so the run starts from a settled system. Resolves with the
   * number of agents that never answered within `timeoutMs`.
   */
  async function warmUp(timeoutMs, concurrency = 16) {
    const deadline = Date.now() + timeoutMs;
    const queue = [...names];
    let missing = 0;
    const once = (agent) =>
      new Promise((resolve) => {
        const req = https.request(
          {
            agent: httpAgent,
            host: '127.0.0.1',
            port,
            path: `/clusters/${agent}${DEPLOYMENTS}/guestbook`,
            headers: { authorization: `Bearer ${topo.tokens.get(agent)}` },
            timeout: deadlineMs,
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode === 200));
            res.on('error', () => resolve(false));
          },
        );
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
        req.end();
      });
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let agent = queue.shift(); agent !== undefined; agent = queue.shift()) {
          while (!(await once(agent))) {
            if (Date.now() > deadline) {
              missing++;
              break;
            }
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      }),
    );
    return missing;
  }

  return {
    records,
    shed,
    offered: () => offered,
    warmUp,
    watches,
    follows,
    pubsub: { published, received, intervals },
    start() {
      for (const agent of watched) watch(agent);
      if (!process.env.SOAK_NO_FOLLOW) for (const agent of logged) follow(agent);
      if (watched.length > 0 && !process.env.SOAK_NO_STUCK) startStuckReader(watched[0]);
      const t0 = Date.now();
      every(5, () => {
        const due = Math.floor(((Date.now() - t0) / 1000) * rate);
        while (offered < due) issue(offered++);
      });
      every(50, publish);
    },
    startDisconnects() {
      disconnects = every(500, disconnectMidBody);
    },
    stopDisconnects: () => clearInterval(disconnects),
    inFlight: () => records.filter((r) => r.end === undefined).length,
    async stop() {
      running = false;
      for (const t of timers) clearInterval(t);
      // Let what is in flight finish or be given up on, so every record is judged.
      const deadline = Date.now() + deadlineMs + GIVE_UP_AFTER_MS + 1_000;
      while (records.some((r) => r.end === undefined && r.kind !== 'watch-unread') && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      stuck?.abort();
      for (const abort of closers) abort();
      for (const c of [...redisClients, subscriber, publisher]) c.disconnect();
      httpAgent.destroy();
      streamAgent.destroy();
    },
    flapper,
  };
}
