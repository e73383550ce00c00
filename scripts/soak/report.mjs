// The soak report's arithmetic, kept free of processes and clocks so that it is unit-tested
// (scripts/test/soak-report.test.ts): hang detection, per-kind outcomes, failure windows per
// fault, watch-event and pub/sub loss, resource return to baseline, error log lines.

/** A request outlived its deadline by more than this: a hang. */
export const HANG_GRACE_MS = 1_000;

/**
 * A request record: `{ kind, agent, start, end?, deadlineMs, outcome: 'ok'|'failed'|'timeout' }`
 * (`end` undefined while it has not finished). A hang is a request that finished more than
 * HANG_GRACE_MS after its deadline, or that has not finished by `now` and is that late already.
 */
export function isHang(r, now) {
  const limit = r.start + r.deadlineMs + HANG_GRACE_MS;
  return r.end === undefined ? now > limit : r.end > limit;
}

/** ok / failed / timedOut / hangs per kind; a hang is counted as a hang only, not also as failed. */
export function outcomesByKind(records, now) {
  const out = {};
  for (const r of records) {
    out[r.kind] ??= { total: 0, ok: 0, failed: 0, timedOut: 0, hangs: 0 };
    const k = out[r.kind];
    k.total++;
    if (isHang(r, now)) k.hangs++;
    else if (r.end === undefined)
      k.total--; // still within its deadline: not judged yet
    else if (r.outcome === 'ok') k.ok++;
    else if (r.outcome === 'timeout') k.timedOut++;
    else k.failed++;
  }
  return out;
}

const median = (xs) => {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
};

/**
 * The failure window of a fault at `fault.at`: the agents it affected are those (of
 * `fault.agents`, or all) with a request that failed, timed out or hung and ended at or after
 * the fault (and before `until`); each one's window is the time from the fault to the end of
 * its first successful request that started after its first such failure. `first` is the
 * smallest window (the fault to the first success for an affected agent), `last` the largest
 * (every affected agent served again); agents with no success before `until` are `unrecovered`.
 */
export function failureWindow(fault, records, until, now = until) {
  const scope = fault.agents ? new Set(fault.agents) : undefined;
  const byAgent = new Map();
  const ofAgent = new Map(); // each agent's records, so a long run is not scanned once per agent
  for (const r of records) {
    if (scope && !scope.has(r.agent)) continue;
    if (r.start >= until) continue;
    const own = ofAgent.get(r.agent);
    if (own) own.push(r);
    else ofAgent.set(r.agent, [r]);
    const bad = r.outcome !== 'ok' || isHang(r, now);
    const at = r.end ?? now;
    if (bad && at >= fault.at && at < until) {
      const a = byAgent.get(r.agent) ?? { firstFailure: Number.POSITIVE_INFINITY, failures: 0 };
      a.firstFailure = Math.min(a.firstFailure, r.start < fault.at ? fault.at : r.start);
      a.failures++;
      byAgent.set(r.agent, a);
    }
  }
  const windows = [];
  let unrecovered = 0;
  let failures = 0;
  for (const [agent, a] of byAgent) {
    failures += a.failures;
    let success;
    for (const r of ofAgent.get(agent)) {
      if (r.outcome !== 'ok' || r.end === undefined || isHang(r, now)) continue;
      if (r.start < a.firstFailure || r.end >= until) continue;
      if (success === undefined || r.end < success) success = r.end;
    }
    if (success === undefined) unrecovered++;
    else windows.push(success - fault.at);
  }
  return {
    name: fault.name,
    at: fault.at,
    affectedAgents: byAgent.size,
    failures,
    firstMs: windows.length ? Math.min(...windows) : undefined,
    medianMs: median(windows),
    lastMs: windows.length ? Math.max(...windows) : undefined,
    unrecovered,
  };
}

/**
 * Watch events lost for one watched object: `emitted` are the resourceVersions the simulated
 * cluster produced in order, `seen` those any watcher of it received; only changes after the
 * watch began (`fromRv`) and up to the last one emitted before the watchers stopped (`toRv`)
 * count. Duplicates (the same version delivered twice, e.g. replayed after a resume) are
 * counted apart.
 */
export function watchLoss({ emitted, seen, fromRv, toRv }) {
  const inRange = emitted.filter((rv) => Number(rv) > Number(fromRv) && Number(rv) <= Number(toRv));
  const seenSet = new Set(seen);
  const lost = inRange.filter((rv) => !seenSet.has(rv));
  return {
    emitted: inRange.length,
    seen: inRange.length - lost.length,
    lost: lost.length,
    duplicates: seen.length - seenSet.size,
  };
}

/**
 * Pub/sub messages lost: `published` `[{ seq, at }]`, `received` the seqs the subscriber got,
 * `intervals` `[{ from, to }]` when it was subscribed (to undefined: still). Redis pub/sub
 * delivers at most once, so a message published while the subscriber was away is missed, not
 * lost; one published in the last `marginMs` before a disconnect may have been in flight on the
 * connection that died (`lostAtDisconnect`). Anything else unreceived is `lost`.
 */
export function pubsubLoss({ published, received, intervals, marginMs = 1_000 }) {
  const got = new Set(received);
  let lost = 0;
  let lostAtDisconnect = 0;
  let missedWhileAway = 0;
  for (const m of published) {
    if (got.has(m.seq)) continue;
    const during = intervals.find((i) => m.at >= i.from && (i.to === undefined || m.at <= i.to));
    if (!during) missedWhileAway++;
    else if (during.to !== undefined && during.to - m.at <= marginMs) lostAtDisconnect++;
    else lost++;
  }
  return { published: published.length, received: got.size, lost, lostAtDisconnect, missedWhileAway };
}

/** RSS may end at most this much above its baseline: 25 % plus 32 MiB (heaps settle, JIT code grows). */
export const RSS_TOLERANCE = { factor: 1.25, plusKb: 32 * 1024 };
/** Open file descriptors may end at most 20 % plus 16 above baseline. */
export const FD_TOLERANCE = { factor: 1.2, plus: 16 };

/**
 * Per process, from `[{ t, rss (kB), fds }]` samples: the peak, the baseline (median over
 * `baseline` [from, to)) and the end (median over `final` [from, to)), and whether the end came
 * back within tolerance of the baseline. A process with no samples in a window is not judged.
 */
export function resourceReturn(samples, baseline, final) {
  const within = (w) => samples.filter((s) => s.t >= w.from && s.t < w.to);
  const b = within(baseline);
  const f = within(final);
  const peakRssKb = samples.length ? Math.max(...samples.map((s) => s.rss)) : undefined;
  const peakFds = samples.length ? Math.max(...samples.map((s) => s.fds)) : undefined;
  if (b.length === 0 || f.length === 0) return { peakRssKb, peakFds, judged: false, returned: true };
  const baseRssKb = median(b.map((s) => s.rss));
  const baseFds = median(b.map((s) => s.fds));
  const endRssKb = median(f.map((s) => s.rss));
  const endFds = median(f.map((s) => s.fds));
  const rssOk = endRssKb <= baseRssKb * RSS_TOLERANCE.factor + RSS_TOLERANCE.plusKb;
  const fdsOk = endFds <= baseFds * FD_TOLERANCE.factor + FD_TOLERANCE.plus;
  return {
    peakRssKb,
    peakFds,
    baseRssKb,
    baseFds,
    endRssKb,
    endFds,
    judged: true,
    rssReturned: rssOk,
    fdsReturned: fdsOk,
    returned: rssOk && fdsOk,
  };
}

/**
 * Replicas behind one balancer (`name-1`, `name-2`, …) share their clients' kept-alive
 * connections: after one is killed, the connections it held move to the other and stay there.
 * Their descriptors are judged together (the sums of their baselines and ends, within the same
 * tolerance per replica); RSS stays judged per process. Returns `processes` with `returned`
 * (and `fdsJudgedWith`, the replica set) updated.
 */
export function judgeReplicaDescriptors(processes) {
  const sets = new Map();
  for (const [name, p] of Object.entries(processes)) {
    const m = /^(.*)-\d+$/.exec(name);
    if (!m || !p.judged || p.baseFds === undefined) continue;
    sets.set(m[1], [...(sets.get(m[1]) ?? []), name]);
  }
  const out = { ...processes };
  for (const names of sets.values()) {
    if (names.length < 2) continue;
    const base = names.reduce((s, n) => s + processes[n].baseFds, 0);
    const end = names.reduce((s, n) => s + processes[n].endFds, 0);
    const fdsOk = end <= base * FD_TOLERANCE.factor + FD_TOLERANCE.plus * names.length;
    for (const n of names) {
      const p = processes[n];
      out[n] = { ...p, fdsReturned: fdsOk, fdsJudgedWith: names, returned: p.rssReturned && fdsOk };
    }
  }
  return out;
}

/**
 * A process judged on its live memory after a full collection (`{ heapUsed, external }` in bytes,
 * before the first fault and at the end) within the RSS tolerance, instead of its RSS; its
 * descriptors as before.
 */
export function judgeLiveHeap(p, { before, end }) {
  const beforeKb = (before.heapUsed + before.external) / 1024;
  const endKb = (end.heapUsed + end.external) / 1024;
  const heapOk = endKb <= beforeKb * RSS_TOLERANCE.factor + RSS_TOLERANCE.plusKb;
  return { ...p, liveHeap: { beforeKb, endKb }, returned: heapOk && p.fdsReturned !== false };
}

/** Lines of pino JSON output at error level or above (level ≥ 50). */
export function errorLines(lines) {
  let n = 0;
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    try {
      if (JSON.parse(line).level >= 50) n++;
    } catch {
      // not JSON: not a log record
    }
  }
  return n;
}

/** Whether the run passed: no hangs, and every judged process came back to its baseline. */
export function verdict(report) {
  const hangs = Object.values(report.requests).reduce((s, k) => s + k.hangs, 0);
  const notReturned = Object.entries(report.processes)
    .filter(([, p]) => !p.returned)
    .map(([name]) => name);
  const reasons = [];
  if (hangs > 0) reasons.push(`${hangs} hang(s)`);
  if (notReturned.length > 0) reasons.push(`resources did not return to baseline: ${notReturned.join(', ')}`);
  return { pass: reasons.length === 0, hangs, reasons };
}
