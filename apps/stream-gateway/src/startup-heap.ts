import v8 from 'node:v8';

// Imported first by main.ts, so this runs before the other modules are evaluated.
//
// Nearly everything allocated while the app starts (modules, schemas, descriptors) lives
// for the whole process, so each scavenge finds most of the young generation alive and V8
// doubles it, up to 2 x 16 MiB of semi-spaces that stay resident and empty once the app
// idles: about 20 MiB of the gateway's idle RSS. Holding the young generation at its
// initial size while starting costs a few more promotions; `releaseStartupHeap` restores
// V8's default growth, so under load it grows as before.
v8.setFlagsFromString('--semi-space-growth-factor=1');

/** V8's default: the young generation doubles when the survivors outgrow it. */
const DEFAULT_GROWTH_FACTOR = 2;

/** Lets the young generation grow again: call once the app has started. */
export function releaseStartupHeap(): void {
  v8.setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
}
