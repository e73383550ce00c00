import { type FSWatcher, watch } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

/** How long a burst of file events is collected before one re-read (ms). */
export const FILE_WATCH_DEBOUNCE_MS = 200;

/**
 * Calls `changed` once after a burst of changes to the directories holding `paths`.
 *
 * Directories, not the files, are watched: a mounted Secret's files are symlinks into `..data`,
 * which the kubelet swaps atomically (a new timestamped directory, then `..data_tmp` renamed over
 * `..data`); a watch on the file would follow the old inode and never fire again. Any event in
 * the directory (rename or change) triggers a re-read, which the caller compares with what it
 * has, so unrelated files cost one read, never a reload.
 */
export function watchFiles(
  paths: readonly string[],
  changed: () => void,
  logger: Logger,
  debounceMs = FILE_WATCH_DEBOUNCE_MS,
): () => void {
  const dirs = [...new Set(paths.map((p) => path.dirname(path.resolve(p))))];
  let timer: NodeJS.Timeout | undefined;
  const fire = () => {
    clearTimeout(timer);
    timer = setTimeout(changed, debounceMs);
    timer.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const dir of dirs) {
    try {
      const w = watch(dir, { persistent: false }, fire);
      w.on('error', (err) =>
        logger.warn({ dir, err: String(err) }, 'file watch failed; SIGHUP still reloads'),
      );
      watchers.push(w);
    } catch (err) {
      logger.warn({ dir, err: String(err) }, 'cannot watch the directory; SIGHUP still reloads');
    }
  }
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
