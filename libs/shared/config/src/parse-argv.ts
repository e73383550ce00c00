import { editDistance, namesOf } from './names.js';
import type { OptionDef } from './option-types.js';

/** A flag seen on the command line; repeated flags keep every occurrence in order. */
export interface FlagValue {
  readonly raw: string;
  /** As written, e.g. `--no-insecure`, for error messages. */
  readonly spelling: string;
}

export interface ParsedArgv {
  readonly values: ReadonlyMap<string, readonly FlagValue[]>;
  readonly paramsFile: string | undefined;
  readonly help: boolean;
  readonly problems: readonly string[];
}

/**
 * pflag-style parsing: `--name=value`, `--name value`, `--flag`, `--flag=false`, `--no-flag`, `--`.
 * Like pflag, `--name value` takes the next argument even when it starts with a dash.
 */
export function parseArgv(
  argv: readonly string[],
  options: readonly OptionDef[],
  describeUnknown: (flag: string) => string | undefined = () => undefined,
): ParsedArgv {
  const byFlag = new Map<string, OptionDef>();
  for (const o of options) {
    byFlag.set(o.flag, o);
    for (const alias of namesOf(o.aliases)) byFlag.set(alias, o);
  }
  const values = new Map<string, FlagValue[]>();
  const problems: string[] = [];
  let paramsFile: string | undefined;
  let help = false;
  const push = (flag: string, value: FlagValue) => {
    const list = values.get(flag) ?? [];
    list.push(value);
    values.set(flag, list);
  };

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      for (const extra of argv.slice(i + 1)) problems.push(`unexpected argument ${JSON.stringify(extra)}`);
      break;
    }
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    if (!arg.startsWith('-') || arg === '-') {
      problems.push(`unexpected argument ${JSON.stringify(arg)}`);
      continue;
    }
    if (!arg.startsWith('--')) {
      const name = arg.slice(1).split('=')[0] ?? '';
      const hint = byFlag.has(name) || name === 'params-file' ? ` (use --${name})` : '';
      problems.push(`unknown flag ${flagOnly(arg)}${hint}`);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const inline = eq < 0 ? undefined : arg.slice(eq + 1);
    const spelling = `--${name}`;
    const takeValue = (): string | undefined => {
      if (inline !== undefined) return inline;
      if (i + 1 < argv.length) return argv[++i];
      problems.push(`${spelling}: needs a value`);
      return undefined;
    };

    if (name === 'params-file') {
      const v = takeValue();
      if (v !== undefined) paramsFile = v;
      continue;
    }
    const opt = byFlag.get(name);
    if (opt?.type === 'boolean') {
      push(opt.flag, { raw: inline ?? 'true', spelling });
      continue;
    }
    if (opt) {
      const v = takeValue();
      if (v !== undefined) push(opt.flag, { raw: v, spelling });
      continue;
    }
    const negated = name.startsWith('no-') ? byFlag.get(name.slice(3)) : undefined;
    if (negated?.type === 'boolean') {
      if (inline !== undefined) problems.push(`${spelling}: does not take a value`);
      else push(negated.flag, { raw: 'false', spelling });
      continue;
    }
    const known = describeUnknown(name);
    problems.push(`unknown flag ${spelling}${known ? ` (${known})` : suggest(name, options)}`);
  }
  return { values, paramsFile, help, problems };
}

/** Whether `--help`/`-h` appears before any `--` terminator. */
export function wantsHelp(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

function flagOnly(arg: string): string {
  const eq = arg.indexOf('=');
  return eq < 0 ? arg : arg.slice(0, eq);
}

function suggest(name: string, options: readonly OptionDef[]): string {
  let best: string | undefined;
  let bestDistance = 3; // farther than two edits is a guess, not a typo
  for (const flag of [...options.flatMap((o) => [o.flag, ...namesOf(o.aliases)]), 'params-file']) {
    const d = editDistance(name, flag);
    if (d < bestDistance) {
      best = flag;
      bestDistance = d;
    }
  }
  return best === undefined ? '' : ` (did you mean --${best}?)`;
}
