import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { filterList, type ManagedCheck, ManagedResolver } from '../src/index.js';
import { deployment, FakeCluster, ownerRef, replicaSet, trackingId } from './support/kube-fixtures.js';

const TOTAL_BYTES = 200 * 1024 * 1024;
const SAMPLE_EVERY = 8 * 1024 * 1024;
const PADDING = 'x'.repeat(1500);

/** A full GC, so samples measure what is live rather than when V8 chose to collect. */
function getGc(): () => void {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (existing) return existing;
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/**
 * Streams a ~200 MB PodList without ever holding it: every third pod is tracked, every
 * third is owned by one of five ReplicaSets of a tracked Deployment, the rest are strays.
 */
async function* hugePodList(
  rsRefs: unknown[],
  onProgress: (bytes: number, items: number) => void,
): AsyncGenerator<Buffer> {
  let produced = 0;
  let i = 0;
  yield Buffer.from('{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"99"},"items":[');
  while (produced < TOTAL_BYTES) {
    let chunk = '';
    while (chunk.length < 64 * 1024) {
      const name = `pod-${i}`;
      const meta: Record<string, unknown> = {
        name,
        namespace: 'guestbook',
        uid: `uid-${i}`,
        resourceVersion: String(i),
      };
      if (i % 3 === 0) {
        meta.annotations = {
          'argocd.argoproj.io/tracking-id': trackingId('big', '', 'Pod', 'guestbook', name),
        };
      } else if (i % 3 === 1) meta.ownerReferences = [rsRefs[i % rsRefs.length]];
      const item = JSON.stringify({
        metadata: meta,
        spec: { containers: [{ name: 'web', image: 'nginx:1.27', args: [PADDING] }] },
        status: { phase: 'Running', message: 'quote " and bracket ] and brace } inside' },
      });
      chunk += i === 0 ? item : `,${item}`;
      i++;
    }
    const b = Buffer.from(chunk);
    produced += b.length;
    onProgress(produced, i);
    yield b;
  }
  yield Buffer.from(']}');
}

describe('memory', () => {
  it('filters a 200 MB list with heap growth bounded by one item, not the list', async () => {
    const gc = getGc();
    const cluster = new FakeCluster();
    const deploy = deployment('big');
    const rss = Array.from({ length: 5 }, (_, k) => replicaSet(`big-${k}`, deploy));
    cluster.add(deploy, ...rss);
    const resolver = new ManagedResolver({ getObject: cluster.getObject });

    // A second pass counts the kept items and proves the output is a well-formed list.
    let counted = 0;
    const counter: ManagedCheck = {
      isTracked: () => true,
      resolve: async () => {
        counted++;
        return 'managed';
      },
      resolveRef: async () => 'managed',
    };

    // Buffers live outside the V8 heap, so count them too: a filter that kept the input's
    // chunks would show up in `external`, not in heapUsed.
    const live = () => {
      const m = process.memoryUsage();
      return m.heapUsed + m.external;
    };
    gc();
    const baseline = live();
    let peak = 0;
    let generated = 0;
    let nextSample = SAMPLE_EVERY;
    const source = hugePodList(
      rss.map((r) => ownerRef(r)),
      (bytes, items) => {
        generated = items;
        if (bytes < nextSample) return;
        nextSample += SAMPLE_EVERY;
        gc();
        peak = Math.max(peak, live() - baseline);
      },
    );
    let outBytes = 0;
    for await (const b of filterList(filterList(source, resolver), counter)) outBytes += b.length;

    expect(generated).toBeGreaterThan(100_000);
    expect(counted).toBe(generated - Math.floor((generated + 1) / 3));
    expect(outBytes).toBeGreaterThan(TOTAL_BYTES * 0.6);
    expect(outBytes).toBeLessThan(TOTAL_BYTES * 0.7);
    expect(cluster.count).toBe(6);
    expect(peak).toBeLessThan(30 * 1024 * 1024);
  }, 60_000);
});
