import { resolve } from 'node:path';
import { assertValidOptionTable } from './define-options.js';
import { ConfigError, type ConfigProblem } from './errors.js';
import { camelCase, namesOf } from './names.js';
import type { ConfigSources, InferConfig, OptionDef, ValueSource } from './option-types.js';
import { type ParamsFile, readParamsFile } from './params-file.js';
import { type FlagValue, parseArgv } from './parse-argv.js';
import { type ParseResult, parseOptionValue, resolveDefault } from './parse-value.js';
import {
  describeForeignFlag,
  findUnusedNames,
  type UnusedName,
  type UnusedNameCheck,
} from './unused-names.js';

export type EnvLike = Readonly<Record<string, string | undefined>>;

export interface LoadConfigOptions<T extends readonly OptionDef[]> {
  /** Command-line arguments without the node binary and script, i.e. `process.argv.slice(2)`. */
  readonly argv: readonly string[];
  readonly env: EnvLike;
  /** Env vars naming the params file, e.g. `ARGOCD_PRINCIPAL_PARAMS_FILE`; the first non-empty wins. */
  readonly paramsFileEnv?: string | readonly string[];
  /**
   * Params file used when neither `--params-file` nor `paramsFileEnv` names one (e.g. the app's
   * conventional mount path). Unlike an explicit path, it is silently skipped when missing.
   */
  readonly paramsFile?: string;
  /** Base directory for relative paths; `process.cwd()` by default. */
  readonly cwd?: string;
  /**
   * Cross-field checks, run only once every option parsed (so the config is complete);
   * returned messages join the same `ConfigError` report.
   */
  readonly validate?: (config: InferConfig<T>, sources: ConfigSources<T>) => readonly string[] | undefined;
  /**
   * Report params keys and `ARGOCD_PRINCIPAL_*` / `ARGOCD_AGENT_*` env vars this app does not
   * read (`LoadedConfig.unused`), telling apart those another app of the family reads, those
   * of argocd-agent features, and unknown ones; unknown flags name their owner the same way.
   */
  readonly unusedNames?: UnusedNameCheck;
}

export interface LoadedConfig<T extends readonly OptionDef[]> {
  readonly config: InferConfig<T>;
  readonly sources: ConfigSources<T>;
  /** The params file that was read, if any. */
  readonly paramsFile: string | undefined;
  /** What the params file and env held that this app does not read (with `unusedNames`). */
  readonly unused: readonly UnusedName[];
}

type Candidate = { readonly raw: string; readonly source: ValueSource };

/**
 * Merges flags > env > params file > defaults, parses every value and throws one `ConfigError`
 * listing every problem. Empty env or params values count as unset (argocd-agent ships "" defaults).
 */
export function loadConfig<const T extends readonly OptionDef[]>(
  options: T,
  opts: LoadConfigOptions<T>,
): LoadedConfig<T> {
  assertValidOptionTable(options);
  const ctx = { cwd: opts.cwd ?? process.cwd() };
  const problems: ConfigProblem[] = [];
  const check = opts.unusedNames;
  const argv = parseArgv(opts.argv, options, check ? (flag) => describeForeignFlag(check, flag) : undefined);
  for (const message of argv.problems) problems.push({ message });

  const params = loadParamsFile(argv.paramsFile, opts, problems);
  const config: Record<string, unknown> = {};
  const sources: Record<string, ValueSource> = {};

  for (const opt of options) {
    const key = camelCase(opt.flag);
    const candidate =
      fromFlags(opt, argv.values.get(opt.flag)) ?? fromEnv(opt, opts.env) ?? fromParams(opt, params);
    const source: ValueSource = candidate?.source ?? { kind: 'default' };
    const result: ParseResult = candidate
      ? parseOptionValue(opt, candidate.raw, ctx)
      : resolveDefault(opt, ctx);
    if (!result.ok) {
      const shown = opt.secret ? 'value' : quote(candidate?.raw ?? String(opt.default));
      problems.push({
        option: opt.flag,
        source: formatSource(source),
        message: `--${opt.flag}: ${shown} ${result.reason} (from ${formatSource(source)})`,
      });
      continue;
    }
    if (result.value === undefined && opt.required) {
      problems.push({ option: opt.flag, message: `--${opt.flag}: is required (set ${whereToSet(opt)})` });
      continue;
    }
    config[key] = result.value;
    sources[key] = source;
  }

  if (problems.length === 0 && opts.validate) {
    let messages: readonly string[] | undefined;
    try {
      messages = opts.validate(config as InferConfig<T>, sources as ConfigSources<T>);
    } catch (err) {
      messages = [`validation failed: ${(err as Error).message}`];
    }
    for (const message of messages ?? []) problems.push({ message });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    config: config as InferConfig<T>,
    sources: sources as ConfigSources<T>,
    paramsFile: params?.path,
    unused: check
      ? findUnusedNames(options, check, {
          env: opts.env,
          params,
          ...(opts.paramsFileEnv ? { paramsFileEnv: opts.paramsFileEnv } : {}),
        })
      : [],
  };
}

/** `flag --x`, `env X`, `params key a.b in /path`, `default`: used in errors and startup logs. */
export function formatSource(source: ValueSource): string {
  switch (source.kind) {
    case 'flag':
      return `flag ${source.name}`;
    case 'env':
      return `env ${source.name}`;
    case 'params':
      return `params key ${source.name} in ${source.file}`;
    case 'default':
      return 'default';
  }
}

function loadParamsFile(
  fromFlag: string | undefined,
  opts: LoadConfigOptions<readonly OptionDef[]>,
  problems: ConfigProblem[],
): ParamsFile | undefined {
  let path: string | undefined;
  let source: string | undefined;
  if (fromFlag !== undefined && fromFlag !== '') {
    path = fromFlag;
    source = 'flag --params-file';
  } else {
    const env = namesOf(opts.paramsFileEnv).find((name) => nonEmpty(opts.env[name]));
    if (env !== undefined) {
      path = opts.env[env];
      source = `env ${env}`;
    }
  }
  if (path === undefined) {
    if (opts.paramsFile === undefined || opts.paramsFile === '') return undefined;
    path = opts.paramsFile;
    source = 'default';
  }
  const file = readParamsFile(resolve(opts.cwd ?? '.', path));
  if (source === 'default' && file.problems.includes('does not exist')) return undefined;
  for (const p of file.problems) {
    problems.push({ source, message: `--params-file: ${quote(path)} ${p} (from ${source})` });
  }
  return file.problems.length > 0 ? undefined : { ...file, path };
}

function fromFlags(opt: OptionDef, values: readonly FlagValue[] | undefined): Candidate | undefined {
  const last = values?.at(-1);
  if (!values || !last) return undefined;
  // pflag slices append on repetition; scalar flags keep the last occurrence.
  const raw = opt.type === 'list' ? values.map((v) => v.raw).join(',') : last.raw;
  return { raw, source: { kind: 'flag', name: last.spelling } };
}

function fromEnv(opt: OptionDef, env: EnvLike): Candidate | undefined {
  for (const name of namesOf(opt.env)) {
    const raw = env[name];
    if (nonEmpty(raw)) return { raw, source: { kind: 'env', name } };
  }
  return undefined;
}

function fromParams(opt: OptionDef, params: ParamsFile | undefined): Candidate | undefined {
  if (!params) return undefined;
  for (const name of namesOf(opt.paramsKey)) {
    const raw = params.entries.get(name);
    if (nonEmpty(raw)) return { raw, source: { kind: 'params', name, file: params.path } };
  }
  return undefined;
}

function nonEmpty(v: string | undefined): v is string {
  return v !== undefined && v !== '';
}

function quote(raw: string): string {
  const short = raw.length > 120 ? `${raw.slice(0, 117)}...` : raw;
  return JSON.stringify(short);
}

function whereToSet(opt: OptionDef): string {
  const places = [`--${opt.flag}`];
  const env = namesOf(opt.env)[0];
  const key = namesOf(opt.paramsKey)[0];
  if (env) places.push(`env ${env}`);
  if (key) places.push(`params key ${key}`);
  return places.length === 1 ? places[0]! : `${places.slice(0, -1).join(', ')} or ${places.at(-1)}`;
}

/**
 * The configuration the options' defaults make, with no flags, env or params file: the base of
 * a service composed in code (the single-process mode), which then sets what differs. Throws
 * `ConfigError` when an option is required.
 */
export function defaultConfig<const T extends readonly OptionDef[]>(options: T): InferConfig<T> {
  return loadConfig(options, { argv: [], env: {} }).config;
}
