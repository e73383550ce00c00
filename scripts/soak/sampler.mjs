// Samples RSS and open file descriptors of every soak process once a second from /proc.
import { readdirSync, readFileSync } from 'node:fs';

const matches = (pid, parts) => {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return parts.every((p) => args.some((a) => a.includes(p)));
  } catch {
    return false; // gone
  }
};

/**
 * A function giving the pid of the process whose command line contains every one of `parts`:
 * the last one found while it still matches, else a scan of /proc (only after a restart, so
 * the soak's own event loop is not spent reading every process on a busy machine).
 */
export function pidOf(parts) {
  let cached;
  return () => {
    if (cached !== undefined && matches(cached, parts)) return cached;
    cached = undefined;
    for (const d of readdirSync('/proc')) {
      if (/^\d+$/.test(d) && matches(d, parts)) {
        cached = Number(d);
        break;
      }
    }
    return cached;
  };
}

function sample(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return { rss, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return undefined; // exited (a killed process between its kill and restart)
  }
}

/** `targets`: `[{ name, pid: () => number | undefined }]`; samples per name, across restarts. */
export function startSampler(targets, periodMs = 1_000) {
  const samples = Object.fromEntries(targets.map((t) => [t.name, []]));
  const timer = setInterval(() => {
    const t = Date.now();
    for (const target of targets) {
      const pid = target.pid();
      const s = pid === undefined ? undefined : sample(pid);
      if (s) samples[target.name].push({ t, ...s });
    }
  }, periodMs);
  return {
    samples,
    stop: () => clearInterval(timer),
  };
}
