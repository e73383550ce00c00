import { formatDuration } from './duration.js';
import { formatSource, type LoadedConfig } from './load-config.js';
import { camelCase } from './names.js';
import type { OptionDef } from './option-types.js';

export interface SummaryEntry {
  readonly value: unknown;
  readonly source: string;
}

/**
 * A log-safe view of the loaded config for the startup log line: each value with where it came
 * from, secrets replaced by `[redacted]`, durations as strings and regexes as their source.
 */
export function configSummary<T extends readonly OptionDef[]>(
  options: T,
  loaded: LoadedConfig<T>,
): Record<string, SummaryEntry> {
  const config = loaded.config as Record<string, unknown>;
  const sources = loaded.sources as Record<string, Parameters<typeof formatSource>[0]>;
  const out: Record<string, SummaryEntry> = {};
  for (const opt of options) {
    const key = camelCase(opt.flag);
    const source = sources[key];
    if (!source) continue;
    out[key] = { value: display(opt, config[key]), source: formatSource(source) };
  }
  return out;
}

function display(opt: OptionDef, value: unknown): unknown {
  if (value === undefined) return undefined;
  if (opt.secret) return '[redacted]';
  if (opt.type === 'duration' && typeof value === 'number') return formatDuration(value);
  if (value instanceof RegExp) return value.source;
  if (opt.type === 'host-port' && typeof value === 'object' && value !== null) {
    const { host, port } = value as { host: string; port: number };
    return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  }
  return value;
}
