// The young generation is held small before the app's modules load (see startup-heap.ts):
// they are imported only once that is in effect.
import './startup-heap.js';

await import('./run.js');
