import { parseDuration } from '@pullplane/config';

/** Argo CD's extension name rule: it becomes a path segment, so nothing that could escape one. */
export const EXTENSION_NAME = /^[A-Za-z0-9-_]+$/;

export function isExtensionName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= 253 && EXTENSION_NAME.test(name);
}

/** Argo CD's per-backend connection options, with its defaults. */
export interface BackendOptions {
  /** Longest wait for a connection to the backend (Argo CD: connectionTimeout, 2s). */
  connectionTimeoutMs: number;
  /** Interval of TCP keep-alive probes on backend connections (keepAlive, 15s). */
  keepAliveMs: number;
  /** An idle keep-alive connection is closed after this long (idleConnectionTimeout, 60s). */
  idleConnectionTimeoutMs: number;
  /** Idle keep-alive connections kept per backend (maxIdleConnections, 30). */
  maxIdleConnections: number;
}

export const DEFAULT_BACKEND_OPTIONS: Readonly<BackendOptions> = Object.freeze({
  connectionTimeoutMs: 2_000,
  keepAliveMs: 15_000,
  idleConnectionTimeoutMs: 60_000,
  maxIdleConnections: 30,
});

const DURATIONS = {
  connectionTimeout: 'connectionTimeoutMs',
  keepAlive: 'keepAliveMs',
  idleConnectionTimeout: 'idleConnectionTimeoutMs',
} as const;

/**
 * Reads `backend:` options (Go durations such as "2s", "1m30s"); unknown keys and bad values
 * are reported, and the default stays in their place.
 * @param at where the block is, for messages (e.g. `extensions[0].backend`)
 */
export function parseBackendOptions(
  raw: unknown,
  at: string,
  problems: string[],
  ignore: readonly string[] = [],
): BackendOptions {
  const out: BackendOptions = { ...DEFAULT_BACKEND_OPTIONS };
  if (raw === undefined || raw === null) return out;
  if (!isRecord(raw)) {
    problems.push(`${at}: must be a mapping`);
    return out;
  }
  for (const [key, value] of Object.entries(raw)) {
    if (ignore.includes(key)) continue;
    if (key in DURATIONS) {
      const field = DURATIONS[key as keyof typeof DURATIONS];
      if (typeof value !== 'string') {
        problems.push(`${at}.${key}: must be a duration such as "2s"`);
        continue;
      }
      try {
        const ms = parseDuration(value);
        if (ms < 0) problems.push(`${at}.${key}: must not be negative`);
        else out[field] = ms;
      } catch (err) {
        problems.push(`${at}.${key}: ${(err as Error).message}`);
      }
    } else if (key === 'maxIdleConnections') {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
        problems.push(`${at}.maxIdleConnections: must be a whole number ≥ 0`);
      else out.maxIdleConnections = value;
    } else {
      problems.push(`${at}.${key}: unknown key`);
    }
  }
  return out;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
