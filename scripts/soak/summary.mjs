// Puts the soak's records together into its report (scripts/soak/report.mjs does the
// arithmetic) and prints it.
import {
  errorLines,
  failureWindow,
  judgeLiveHeap,
  judgeReplicaDescriptors,
  outcomesByKind,
  pubsubLoss,
  resourceReturn,
  verdict,
  watchLoss,
} from './report.mjs';

/** Kinds whose failures count against a fault (a deliberate mid-body disconnect does not). */
const ROUTED_KINDS = new Set(['get', 'list', 'redis', 'watch', 'logs']);

export function buildReport({
  meta,
  load,
  faults,
  window,
  emitted,
  logLines,
  samples,
  logsOf,
  simulatorHeap,
}) {
  const now = Date.now();
  const routed = load.records.filter((r) => ROUTED_KINDS.has(r.kind));
  const others = routed.filter((r) => r.agent !== meta.flapper);
  const faultWindows = faults.map((f, i) =>
    failureWindow(f, others, faults[i + 1]?.at ?? window.loadEnd, now),
  );
  const watch = {
    watchers: 0,
    emitted: 0,
    seen: 0,
    lost: 0,
    duplicates: 0,
    reconnects: 0,
    relists: 0,
    maxGapMs: 0,
  };
  for (const [agent, w] of load.watches) {
    const list = emitted[agent] ?? [];
    const loss = watchLoss({ emitted: list, seen: w.seen, fromRv: w.fromRv, toRv: list.at(-1) ?? w.fromRv });
    watch.watchers++;
    watch.emitted += loss.emitted;
    watch.seen += loss.seen;
    watch.lost += loss.lost;
    watch.duplicates += loss.duplicates;
    watch.reconnects += w.reconnects;
    watch.relists += w.relists;
    watch.maxGapMs = Math.max(watch.maxGapMs, w.maxGapMs);
  }
  const follow = { followers: 0, appended: 0, lost: 0, reconnects: 0 };
  for (const [agent, f] of load.follows) {
    const appended = logLines[agent] ?? 0;
    let got = 0;
    for (let n = 1; n <= appended; n++) if (f.lines.has(n)) got++;
    follow.followers++;
    follow.appended += appended;
    follow.lost += appended - got;
    follow.reconnects += f.reconnects;
  }
  const judged = {};
  for (const [name, s] of Object.entries(samples)) {
    const r = resourceReturn(s, window.baseline, window.final);
    judged[name] = { ...r, errorLines: logsOf[name] ? errorLines(logsOf[name]) : undefined };
  }
  const processes = judgeReplicaDescriptors(judged);
  // The simulator hosts 500 agents and their clusters in one process: it is judged on its live
  // heap after a full collection (a leak shows there), its RSS only reported (the allocator
  // keeps pages after a peak; one agent per process is what runs in a cluster).
  if (simulatorHeap && processes.simulator?.judged)
    processes.simulator = judgeLiveHeap(processes.simulator, simulatorHeap);
  const flapperRecords = outcomesByKind(
    routed.filter((r) => r.agent === meta.flapper),
    now,
  );
  const report = {
    meta,
    requests: outcomesByKind(load.records, now),
    offered: load.offered(),
    shed: load.shed,
    faults: faultWindows,
    flapper: { agent: meta.flapper, flaps: meta.flaps, requests: flapperRecords },
    watch,
    follow,
    pubsub: pubsubLoss(load.pubsub),
    processes,
  };
  report.verdict = verdict(report);
  return report;
}

const ms = (v) => (v === undefined ? '—' : `${(v / 1000).toFixed(2)} s`);
const mib = (kb) => (kb === undefined ? '—' : (kb / 1024).toFixed(0));

export function formatReport(r) {
  const m = r.meta;
  const out = [];
  out.push(`## Soak run ${m.date.slice(0, 16)}Z (commit ${m.commit})`, '');
  out.push(`- machine: ${m.machine}`);
  out.push(
    `- the soak process's event loop (it runs the balancers and the load): p99 delay ${m.soakLoopDelayMs.p99.toFixed(0)} ms, max ${m.soakLoopDelayMs.max.toFixed(0)} ms`,
  );
  out.push(
    `- ${m.agents} agents (all connected and answering ${m.startupS} s after the start), ${m.rate} req/s for ${m.durationS} s, request deadline ${m.deadlineMs / 1000} s, flapping agent ${m.flapper} (${m.flaps} flaps)`,
    '',
  );
  out.push(
    '| kind | total | ok | failed | timed out | hangs | not sent (in-flight cap) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const [kind, k] of Object.entries(r.requests))
    out.push(
      `| ${kind} | ${k.total} | ${k.ok} | ${k.failed} | ${k.timedOut} | ${k.hangs} | ${r.shed[kind] ?? 0} |`,
    );
  out.push('', `- fixed-rate requests offered: ${r.offered}`);
  out.push('', '| fault | agents affected | failures | first success | median | last | not recovered |');
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const f of r.faults)
    out.push(
      `| ${f.name} | ${f.affectedAgents} | ${f.failures} | ${ms(f.firstMs)} | ${ms(f.medianMs)} | ${ms(f.lastMs)} | ${f.unrecovered} |`,
    );
  const w = r.watch;
  out.push(
    '',
    `- watch events: ${w.emitted} emitted to ${w.watchers} watchers, ${w.seen} seen, **${w.lost} lost**, ${w.duplicates} duplicates; ${w.reconnects} reconnects (resumed from the last resourceVersion), ${w.relists} relists after 410; longest gap between events ${ms(w.maxGapMs)}`,
  );
  const f = r.follow;
  out.push(
    `- logs -f: ${f.appended} lines appended for ${f.followers} followers, **${f.lost} never seen**, ${f.reconnects} reconnects`,
  );
  const p = r.pubsub;
  out.push(
    `- redis pub/sub: ${p.published} published, ${p.received} received, **${p.lost} lost while subscribed**, ${p.lostAtDisconnect} in flight on a connection that died, ${p.missedWhileAway} published while the subscriber was reconnecting`,
  );
  const fl = r.flapper.requests;
  const flOk = Object.values(fl).reduce((s, k) => s + k.ok, 0);
  const flAll = Object.values(fl).reduce((s, k) => s + k.total, 0);
  const flHangs = Object.values(fl).reduce((s, k) => s + k.hangs, 0);
  out.push(`- flapping agent: ${flOk} of ${flAll} requests ok, ${flHangs} hangs`, '');
  out.push(
    '| process | peak RSS MiB | RSS MiB baseline → end | peak fds | fds baseline → end | back to baseline | error log lines |',
  );
  out.push('| --- | ---: | ---: | ---: | ---: | --- | ---: |');
  for (const [name, q] of Object.entries(r.processes))
    out.push(
      `| ${name} | ${mib(q.peakRssKb)} | ${mib(q.baseRssKb)} → ${mib(q.endRssKb)} | ${q.peakFds ?? '—'} | ${q.baseFds ?? '—'} → ${q.endFds ?? '—'} | ${q.judged ? (q.returned ? 'yes' : '**no**') : 'not judged'} | ${q.errorLines ?? 'n/a'} |`,
    );
  const heap = r.processes.simulator?.liveHeap;
  if (heap)
    out.push(
      '',
      `The simulator is judged on its live heap after a full collection (heap and external memory), not its RSS: ${mib(heap.beforeKb)} → ${mib(heap.endKb)} MiB.`,
    );
  out.push(
    '',
    r.verdict.pass
      ? '**PASS**: no hangs, every process back to baseline'
      : `**FAIL**: ${r.verdict.reasons.join('; ')}`,
  );
  return out.join('\n');
}
