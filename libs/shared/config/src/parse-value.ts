import { statSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { resolve } from 'node:path';
import { nsToMs, parseDurationNs } from './duration.js';
import type { DurationOption, HostPort, HostPortOption, OptionDef } from './option-types.js';

/**
 * Outcome of parsing one raw value. A failure `reason` reads after the value
 * (`"abc" is not a port`) and never contains the value itself, so secrets stay out of errors.
 */
export type ParseResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly reason: string };

export interface ParseContext {
  /** Base for relative file paths. */
  readonly cwd: string;
}

const ok = (value: unknown): ParseResult => ({ ok: true, value });
const fail = (reason: string): ParseResult => ({ ok: false, reason });

// strconv.ParseBool's spellings, compared case-insensitively.
const TRUE = new Set(['1', 't', 'true']);
const FALSE = new Set(['0', 'f', 'false']);

/** Parses a raw string from a flag, env var or params file according to the option's type. */
export function parseOptionValue(opt: OptionDef, raw: string, ctx: ParseContext): ParseResult {
  switch (opt.type) {
    case 'string':
      if (opt.pattern && !wholeMatch(opt.pattern).test(raw)) return fail(`does not match ${opt.pattern}`);
      return ok(raw);
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (TRUE.has(v)) return ok(true);
      if (FALSE.has(v)) return ok(false);
      return fail('is not a boolean (true or false)');
    }
    case 'int': {
      const v = raw.trim();
      if (!/^[-+]?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) return fail('is not an integer');
      return checkRange(Number(v), opt.min, opt.max, String);
    }
    case 'port': {
      const v = raw.trim();
      const n = Number(v);
      if (!/^\d+$/.test(v) || n > 65535) return fail('is not a port (0-65535)');
      return ok(n);
    }
    case 'duration':
      return parseDurationValue(opt, raw.trim());
    case 'enum':
      return opt.values.includes(raw.trim())
        ? ok(raw.trim())
        : fail(`is not one of: ${opt.values.join(', ')}`);
    case 'list':
      return ok(splitList(raw));
    case 'url':
      return parseUrl(raw.trim(), opt.schemes);
    case 'host-port':
      return parseHostPort(opt, raw.trim());
    case 'file':
      if (opt.mustExist === false) return raw === '' ? fail('is not a path') : ok(raw);
      return checkPath(raw, opt.kind ?? 'file', ctx);
    case 'regex':
      try {
        return ok(new RegExp(raw, opt.flags));
      } catch {
        return fail('is not a valid regular expression');
      }
  }
}

/** The value used when no source sets the option; string defaults go through the parser. */
export function resolveDefault(opt: OptionDef, ctx: ParseContext): ParseResult {
  switch (opt.type) {
    case 'boolean':
      return ok(opt.default ?? false);
    case 'list':
      return ok([...(opt.default ?? [])]);
    case 'duration':
      return typeof opt.default === 'string' ? parseOptionValue(opt, opt.default, ctx) : ok(opt.default);
    case 'url':
    case 'host-port':
    case 'file':
    case 'regex':
      return opt.default === undefined ? ok(undefined) : parseOptionValue(opt, opt.default, ctx);
    default:
      return ok(opt.default);
  }
}

export function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function wholeMatch(pattern: RegExp): RegExp {
  return new RegExp(`^(?:${pattern.source})$`, pattern.flags.replace(/[gy]/g, ''));
}

function checkRange(
  n: number,
  min: number | undefined,
  max: number | undefined,
  show: (n: number) => string,
): ParseResult {
  if (min !== undefined && max !== undefined && (n < min || n > max)) {
    return fail(`must be between ${show(min)} and ${show(max)}`);
  }
  if (min !== undefined && n < min) return fail(`must be at least ${show(min)}`);
  if (max !== undefined && n > max) return fail(`must be at most ${show(max)}`);
  return ok(n);
}

function durationBound(v: number | string | undefined): number | undefined {
  if (typeof v !== 'string') return v;
  const ns = parseDurationNs(v);
  return typeof ns === 'bigint' ? nsToMs(ns) : undefined;
}

function parseDurationValue(opt: DurationOption, raw: string): ParseResult {
  const ns = parseDurationNs(raw, opt.bareNumberUnit ? { bareNumberUnit: opt.bareNumberUnit } : {});
  if (typeof ns !== 'bigint') return fail(ns.reason);
  if (ns < 0n) return fail('must not be negative');
  const show = (ms: number) => {
    const bound = [opt.min, opt.max].find((b) => durationBound(b) === ms);
    return typeof bound === 'string' ? bound : `${ms}ms`;
  };
  return checkRange(nsToMs(ns), durationBound(opt.min), durationBound(opt.max), show);
}

function parseUrl(raw: string, schemes: readonly string[] | undefined): ParseResult {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail('is not a URL');
  }
  const scheme = url.protocol.slice(0, -1);
  if (schemes && !schemes.includes(scheme)) return fail(`must use scheme ${schemes.join(' or ')}`);
  return ok(raw);
}

function parseHostPort(opt: HostPortOption, raw: string): ParseResult {
  let host: string;
  let port: string | undefined;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(raw);
  if (bracketed) {
    host = bracketed[1] ?? '';
    port = bracketed[2];
    if (!isIPv6(host)) return fail('is not host:port (bad IPv6 address)');
  } else if (isIPv6(raw)) {
    // A bare IPv6 address has colons but no port; it is only usable with a default port.
    host = raw;
  } else {
    const i = raw.lastIndexOf(':');
    host = i < 0 ? raw : raw.slice(0, i);
    port = i < 0 ? undefined : raw.slice(i + 1);
    if (host.includes(':')) return fail('is not host:port (wrap IPv6 addresses in [])');
  }
  if (/[\s/]/.test(host)) return fail('is not host:port (bad host)');
  let portNum: number;
  if (port === undefined) {
    if (opt.defaultPort === undefined) return fail('is not host:port (missing port)');
    portNum = opt.defaultPort;
  } else {
    portNum = Number(port);
    if (!/^\d+$/.test(port) || portNum > 65535) return fail('is not host:port (bad port)');
  }
  const value: HostPort = { host, port: portNum };
  return ok(value);
}

export function checkPath(raw: string, kind: 'file' | 'directory' | 'any', ctx: ParseContext): ParseResult {
  if (raw === '') return fail('is not a path');
  try {
    const st = statSync(resolve(ctx.cwd, raw));
    if (kind === 'file' && !st.isFile()) return fail('is not a regular file');
    if (kind === 'directory' && !st.isDirectory()) return fail('is not a directory');
    return ok(raw);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fail(code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `is not accessible (${code})`);
  }
}
