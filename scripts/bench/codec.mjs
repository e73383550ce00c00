// npm run bench:codec — the hand-written frame codec next to protobuf-es, on the built code, in
// one process and one run: nanoseconds per frame and bytes allocated per frame to encode and to
// decode the hot frames. Not a test: it prints a table (markdown) to paste into libs/shared/proto's
// README.
//
// Allocation: the growth of the V8 heap and of ArrayBuffer memory over runs that no garbage
// collection interrupted.
import os from 'node:os';
import v8 from 'node:v8';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  batchFrame,
  dataFrame,
  decodeFrame,
  encodeFrame,
  encodeFrameVectored,
  endFrame,
  FrameSchema,
  frame,
  windowUpdateFrame,
} from '@pullplane/proto';

const quick = process.env.BENCH_QUICK === '1';
const RUN_MS = Number(process.env.BENCH_RUN_MS ?? (quick ? 100 : 400));

const headers = (n) =>
  Array.from({ length: n }, (_, i) => ({
    name: ['Accept', 'User-Agent', 'Authorization', 'X-Request-Id'][i % 4],
    value: `value-${i}-${'x'.repeat(20)}`,
  }));

const small = frame({
  case: 'open',
  value: {
    streamId: 4_711,
    head: {
      case: 'http',
      value: {
        method: 'GET',
        path: '/api/v1/namespaces/argocd/pods/argocd-server-5d8f7c9b8-x2x9p',
        headers: headers(6),
      },
    },
    requestId: '6f1c0e34-0a9b-4c1e-9f52-8f1f3b1f4c2d',
    timeoutMs: 30_000,
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  },
});
const smallResponse = frame({
  case: 'responseHead',
  value: {
    streamId: 4_711,
    status: 200,
    headers: headers(5),
    endStream: true,
    body: Buffer.alloc(2 * 1024, 0x7b),
  },
});
const data64 = dataFrame(4_711, Buffer.alloc(64 * 1024, 1));
const data1m = dataFrame(4_711, Buffer.alloc(1024 * 1024, 1), true);
const batch10 = batchFrame([
  smallResponse,
  windowUpdateFrame(3, 65_536),
  dataFrame(5, Buffer.alloc(4096, 2)),
  dataFrame(7, Buffer.alloc(4096, 3)),
  windowUpdateFrame(9, 65_536),
  small,
  dataFrame(11, Buffer.alloc(4096, 4), true),
  endFrame(13),
  windowUpdateFrame(15, 262_144),
  dataFrame(17, Buffer.alloc(16 * 1024, 5)),
]);

const rows = [
  ['Open, small GET head', small],
  ['ResponseHead + 2 KiB body', smallResponse],
  ['Data 64 KiB', data64],
  ['Data 1 MiB', data1m],
  ['Batch of 10', batch10],
];

let keep = 0;

/**
 * ns per call of `fn`: the best of five runs of RUN_MS / 5 each after a warm-up. Other work on
 * the machine only ever adds time, so the fastest run is the closest to the code's own cost.
 */
function timePerOp(fn) {
  for (let i = 0; i < 200; i++) keep ^= fn();
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 5; run++) {
    let n = 0;
    const start = process.hrtime.bigint();
    const until = start + BigInt(Math.ceil(RUN_MS / 5)) * 1_000_000n;
    let now = start;
    while (now < until) {
      for (let i = 0; i < 16; i++) keep ^= fn();
      n += 16;
      now = process.hrtime.bigint();
    }
    best = Math.min(best, Number(now - start) / n);
  }
  return best;
}

/**
 * Bytes allocated per call of `fn`: growth of the V8 heap plus growth of ArrayBuffer memory
 * (Buffers) over a run in which no garbage collection happened (the GC profiler tells), so
 * nothing allocated was freed before it was counted. Median of five such runs.
 */
function bytesPerOp(fn, opsPerRun) {
  const samples = [];
  let ops = opsPerRun;
  for (let attempt = 0; samples.length < 5 && attempt < 60; attempt++) {
    globalThis.gc?.();
    const profiler = new v8.GCProfiler();
    const heap0 = v8.getHeapStatistics().used_heap_size;
    const buffers0 = process.memoryUsage().arrayBuffers;
    profiler.start();
    for (let i = 0; i < ops; i++) keep ^= fn();
    const { statistics } = profiler.stop();
    const heap1 = v8.getHeapStatistics().used_heap_size;
    const buffers1 = process.memoryUsage().arrayBuffers;
    if (statistics.length > 0) {
      ops = Math.max(1, Math.floor(ops / 2));
      continue;
    }
    samples.push((heap1 - heap0 + (buffers1 - buffers0)) / ops);
  }
  if (samples.length === 0) return Number.NaN;
  samples.sort((x, y) => x - y);
  return samples[Math.floor(samples.length / 2)];
}

/** Allocation per call net of the measuring itself (a call that allocates nothing). */
function netBytesPerOp(fn, ops) {
  return Math.max(0, bytesPerOp(fn, ops) - bytesPerOp(() => 1, ops));
}

const fmtNs = (ns) =>
  ns >= 10_000
    ? `${(ns / 1000).toFixed(0)} µs`
    : ns >= 1000
      ? `${(ns / 1000).toFixed(1)} µs`
      : `${ns.toFixed(0)} ns`;
const fmtBytes = (b) =>
  b >= 1024 * 1024
    ? `${(b / 1024 / 1024).toFixed(2)} MiB`
    : b >= 1024
      ? `${(b / 1024).toFixed(1)} KiB`
      : `${b.toFixed(0)} B`;
const ratio = (base, ours) => `${(base / ours).toFixed(1)}×`;

if (!globalThis.gc) console.error('(run with --expose-gc for steadier allocation figures)');

const table = [];
for (const [name, f] of rows) {
  const reference = toBinary(FrameSchema, f);
  const fast = encodeFrame(f);
  if (Buffer.compare(Buffer.from(reference), fast) !== 0) throw new Error(`${name}: codecs disagree`);
  const size = fast.byteLength;
  const ops = Math.max(4, Math.min(2_000, Math.floor((8 * 1024 * 1024) / (size * 4))));
  const encodePb = () => toBinary(FrameSchema, f).byteLength;
  const encodeFast = () => encodeFrame(f).byteLength;
  const encodeVec = () => encodeFrameVectored(f).length;
  const decodePb = () => fromBinary(FrameSchema, reference).kind.case.length;
  const decodeFast = () => decodeFrame(fast).kind.case.length;
  const r = {
    name,
    size,
    encPb: timePerOp(encodePb),
    encFast: timePerOp(encodeFast),
    encVec: timePerOp(encodeVec),
    decPb: timePerOp(decodePb),
    decFast: timePerOp(decodeFast),
    allocEncPb: netBytesPerOp(encodePb, ops),
    allocEncFast: netBytesPerOp(encodeFast, ops),
    allocEncVec: netBytesPerOp(encodeVec, ops),
    allocDecPb: netBytesPerOp(decodePb, ops),
    allocDecFast: netBytesPerOp(decodeFast, ops),
  };
  table.push(r);
}

const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
console.log(
  `\n${new Date().toISOString().slice(0, 10)}, ${cpu} (${os.cpus().length} cores), Node ${process.version}, ${RUN_MS} ms per cell, load average ${os.loadavg()[0].toFixed(1)}\n`,
);
console.log(
  'Time per frame, best of five runs (ratio = protobuf-es ÷ fast; "vectored" leaves payloads ≥ 4 KiB as views):\n',
);
console.log(
  '| frame | bytes | encode protobuf-es | encode fast | ratio | encode vectored | decode protobuf-es | decode fast | ratio |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of table) {
  console.log(
    `| ${r.name} | ${r.size} | ${fmtNs(r.encPb)} | ${fmtNs(r.encFast)} | ${ratio(r.encPb, r.encFast)} | ${fmtNs(r.encVec)} | ${fmtNs(r.decPb)} | ${fmtNs(r.decFast)} | ${ratio(r.decPb, r.decFast)} |`,
  );
}
console.log('\nBytes allocated per frame:\n');
console.log(
  '| frame | encode protobuf-es | encode fast | encode vectored | decode protobuf-es | decode fast |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of table) {
  console.log(
    `| ${r.name} | ${fmtBytes(r.allocEncPb)} | ${fmtBytes(r.allocEncFast)} | ${fmtBytes(r.allocEncVec)} | ${fmtBytes(r.allocDecPb)} | ${fmtBytes(r.allocDecFast)} |`,
  );
}
if (keep === 0.5) console.log(keep);
