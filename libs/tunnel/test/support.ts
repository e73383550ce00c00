import type { Frame } from '@pullplane/proto';
import type { MemoryLink } from '../src/index.js';

/** The frames inside a message: itself, or a batch's frames. */
export function flatten(f: Frame): Frame[] {
  return f.kind.case === 'batch' ? f.kind.value.frames : [f];
}

/**
 * Resolves once the link has been idle (nothing queued either way) for several turns of the
 * event loop: everything the two sides had to say to each other has been said. No timers: a
 * stalled stream shows as a quiet link, not as time passing.
 */
export async function settle(link: MemoryLink, quietTurns = 4): Promise<void> {
  let quiet = 0;
  let lastWritten = -1;
  while (quiet < quietTurns) {
    await new Promise((r) => setImmediate(r));
    const q = link.queued();
    const w = link.written();
    const written = w.toA + w.toB;
    quiet = q.toA === 0 && q.toB === 0 && written === lastWritten ? quiet + 1 : 0;
    lastWritten = written;
  }
}
