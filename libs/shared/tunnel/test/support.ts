import type { Frame } from '@pullplane/proto';
import type { MemoryLink } from '../src/index.js';

/** The frames inside a message: itself, or a batch's frames. */
export function flatten(f: Frame): Frame[] {
  return f.kind.case === 'batch' ? f.kind.value.frames : [f];
}

/** Resolves once the link has been idle for `quietTurns` turns (see `MemoryLink.settle`). */
export function settle(link: MemoryLink, quietTurns = 4): Promise<void> {
  return link.settle(quietTurns);
}
