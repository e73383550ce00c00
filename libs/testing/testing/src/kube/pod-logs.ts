/** One line of container output, with the time the fake "kubelet" saw it. */
export interface LogLine {
  time: string;
  text: string;
}

type Follower = (line: LogLine) => void;

const MAX_LINES_PER_CONTAINER = 10_000;

function logKey(namespace: string, pod: string, container: string): string {
  return `${namespace}/${pod}/${container}`;
}

/** Container logs of the simulated cluster; followers get appended lines synchronously. */
export class PodLogs {
  private readonly lines = new Map<string, LogLine[]>();
  private readonly followers = new Map<string, Set<Follower>>();

  append(namespace: string, pod: string, container: string, text: string, time = new Date()): void {
    const key = logKey(namespace, pod, container);
    let buffer = this.lines.get(key);
    if (!buffer) {
      buffer = [];
      this.lines.set(key, buffer);
    }
    // Multi-line appends become separate lines, as container runtimes record them.
    for (const part of text.replace(/\n$/, '').split('\n')) {
      const line = { time: time.toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z'), text: part };
      buffer.push(line);
      if (buffer.length > MAX_LINES_PER_CONTAINER) buffer.shift();
      for (const follower of this.followers.get(key) ?? []) follower(line);
    }
  }

  read(namespace: string, pod: string, container: string): readonly LogLine[] {
    return this.lines.get(logKey(namespace, pod, container)) ?? [];
  }

  follow(namespace: string, pod: string, container: string, follower: Follower): () => void {
    const key = logKey(namespace, pod, container);
    let set = this.followers.get(key);
    if (!set) {
      set = new Set();
      this.followers.set(key, set);
    }
    set.add(follower);
    return () => {
      set.delete(follower);
      if (set.size === 0) this.followers.delete(key);
    };
  }

  /** Forgets a deleted pod's logs (a new pod with the same name starts empty). */
  forgetPod(namespace: string, pod: string): void {
    const prefix = `${namespace}/${pod}/`;
    for (const key of this.lines.keys()) if (key.startsWith(prefix)) this.lines.delete(key);
  }

  followerCount(): number {
    let n = 0;
    for (const set of this.followers.values()) n += set.size;
    return n;
  }
}
