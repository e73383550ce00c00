import v8 from 'node:v8';

// Imported first by a main (before its other modules are evaluated), this holds V8's young
// generation at its initial size while the service starts.
//
// Nearly everything allocated while a service starts (modules, schemas, descriptors) lives
// for the whole process, so each scavenge finds most of the young generation alive and V8
// doubles it, up to 2 x 16 MiB of semi-spaces that stay resident and empty once the service
// idles: about 20 MiB of the gateway's idle RSS. Holding it costs a few more promotions while
// starting; `releaseStartupHeap` restores V8's default growth, so under load it grows as before.
v8.setFlagsFromString('--semi-space-growth-factor=1');

/** V8's default: the young generation doubles when the survivors outgrow it. */
const DEFAULT_GROWTH_FACTOR = 2;

/** Lets the young generation grow again: call once the service has started. */
export function releaseStartupHeap(): void {
  v8.setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
}
