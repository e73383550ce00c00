import { EventEmitter } from 'node:events';
import { unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { type AgentExtension, parseAgentExtensionMap } from '@pullplane/extension-config';
import type { Logger } from 'pino';
import { BackendPool } from './backend-pool.js';

/** Where `$key` header values come from: the agent's extensions Secret, as it is now. */
export interface ExtensionSecretSource {
  current(): Readonly<Record<string, Buffer>> | undefined;
  /** Called whenever the Secret changes; returns an unsubscribe. */
  onChange(listener: () => void): () => void;
  /** For messages: e.g. `Secret argocd/pullplane-agent-extensions`. */
  readonly description: string;
}

export interface ExtensionRegistryOptions {
  /** The extension map file (a mounted ConfigMap key); re-read whenever it changes. */
  path?: string;
  /** The map itself (a params key), when there is no file. */
  inline?: string;
  secret?: ExtensionSecretSource;
  logger: Logger;
  /** How often the file is checked for changes (ms); kubelet swaps ConfigMap files atomically. */
  pollIntervalMs?: number;
}

/** An extension as served now: its map entry and a connection pool built from its options. */
export interface ServedExtension extends AgentExtension {
  readonly pool: BackendPool;
}

export type ResolvedHeaders =
  | { ok: true; headers: Array<{ name: string; value: string }> }
  | { ok: false; missing: string[] };

export interface ExtensionRegistryEvents {
  /** A new map is in force (names now served). */
  reload: [string[]];
}

/**
 * The agent's extension map, hot-reloaded: the file is watched and re-read on change, a map
 * with problems keeps its good entries (each problem logged), and a file that cannot be read
 * or parsed at all keeps the previous map. Each extension gets its own keep-alive pool built
 * from its backend options; pools of replaced entries are retired once their requests finish.
 */
export class ExtensionRegistry extends EventEmitter<ExtensionRegistryEvents> {
  private map = new Map<string, ServedExtension>();
  private lastText: string | undefined;
  private watching = false;

  constructor(private readonly opts: ExtensionRegistryOptions) {
    super();
  }

  get names(): string[] {
    return [...this.map.keys()];
  }

  lookup(name: string): ServedExtension | undefined {
    return this.map.get(name);
  }

  get secretDescription(): string {
    return this.opts.secret?.description ?? 'the extensions Secret (not configured)';
  }

  async start(): Promise<void> {
    await this.reload();
    const path = this.opts.path;
    if (path && !this.watching) {
      this.watching = true;
      watchFile(path, { interval: this.opts.pollIntervalMs ?? 2_000, persistent: false }, () => {
        void this.reload();
      });
    }
  }

  stop(): void {
    if (this.opts.path && this.watching) unwatchFile(this.opts.path);
    this.watching = false;
    for (const ext of this.map.values()) ext.pool.destroy();
    this.map.clear();
  }

  /** Re-reads the map now (SIGHUP, config reload); the file watch calls it on change. */
  async reload(): Promise<void> {
    const log = this.opts.logger;
    let text: string;
    if (this.opts.path) {
      try {
        text = await readFile(this.opts.path, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' && this.lastText === undefined) {
          log.warn(
            { path: this.opts.path },
            'extension map file not found; serving no extensions until it appears',
          );
          this.lastText = '';
          return;
        }
        log.error(
          { path: this.opts.path, err: String(err) },
          'cannot read the extension map; keeping the current one',
        );
        return;
      }
    } else text = this.opts.inline ?? '';
    if (text === this.lastText) return;
    const parsed = parseAgentExtensionMap(text);
    for (const problem of parsed.problems) log.error({ problem }, 'extension map problem; entry left out');
    if (
      parsed.problems.length > 0 &&
      parsed.extensions.size === 0 &&
      text.trim() !== '' &&
      this.map.size > 0
    ) {
      log.error('the new extension map has no usable entry; keeping the current one');
      return;
    }
    this.lastText = text;
    const next = new Map<string, ServedExtension>();
    for (const ext of parsed.extensions.values()) {
      const prev = this.map.get(ext.name);
      // An unchanged entry keeps its pool (and its warm connections).
      if (prev && sameEntry(prev, ext)) next.set(ext.name, prev);
      else next.set(ext.name, { ...ext, pool: new BackendPool(ext.url, ext.backend) });
    }
    for (const [name, prev] of this.map) if (next.get(name) !== prev) prev.pool.retire();
    this.map = next;
    log.info({ extensions: this.names, source: this.opts.path ?? 'params' }, 'extension map loaded');
    this.emit('reload', this.names);
  }

  /** The configured headers with `$key` values read from the Secret now. */
  resolveHeaders(ext: AgentExtension): ResolvedHeaders {
    const out: Array<{ name: string; value: string }> = [];
    const missing: string[] = [];
    const data = this.opts.secret?.current();
    for (const h of ext.headers) {
      if ('value' in h) {
        out.push(h);
        continue;
      }
      const v = data?.[h.secretKey];
      if (v === undefined) missing.push(h.secretKey);
      else out.push({ name: h.name, value: v.toString('utf8').trim() });
    }
    return missing.length > 0 ? { ok: false, missing } : { ok: true, headers: out };
  }
}

function sameEntry(a: AgentExtension, b: AgentExtension): boolean {
  return (
    a.url.href === b.url.href &&
    JSON.stringify(a.headers) === JSON.stringify(b.headers) &&
    JSON.stringify(a.backend) === JSON.stringify(b.backend)
  );
}
