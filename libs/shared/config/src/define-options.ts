import { parseDurationNs } from './duration.js';
import { OptionDefinitionError } from './errors.js';
import { camelCase, namesOf } from './names.js';
import type { OptionDef } from './option-types.js';

/** Flags every app understands; options may not reuse them. */
export const RESERVED_FLAGS: readonly string[] = ['help', 'params-file'];

const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const checked = new WeakSet<readonly OptionDef[]>();

/** Identity helper that keeps literal types (flag names, enum values) for `InferConfig`. */
export function defineOption<const O extends OptionDef>(option: O): O {
  return option;
}

/** Declares an option table; checks it eagerly so mistakes surface at import time. */
export function defineOptions<const T extends readonly OptionDef[]>(options: T): T {
  assertValidOptionTable(options);
  return options;
}

/** Throws `OptionDefinitionError` on duplicate names or defaults that contradict their type. */
export function assertValidOptionTable(options: readonly OptionDef[]): void {
  if (checked.has(options)) return;
  const seen = new Map<string, string>();
  const claim = (kind: string, name: string, owner: string) => {
    const key = `${kind}:${name}`;
    const prev = seen.get(key);
    if (prev !== undefined) {
      throw new OptionDefinitionError(`${kind} ${name} is used by both --${prev} and --${owner}`);
    }
    seen.set(key, owner);
  };
  for (const opt of options) {
    if (!KEBAB.test(opt.flag)) throw new OptionDefinitionError(`flag "${opt.flag}" is not kebab-case`);
    if (RESERVED_FLAGS.includes(opt.flag)) throw new OptionDefinitionError(`flag --${opt.flag} is reserved`);
    claim('flag', opt.flag, opt.flag);
    claim('config key', camelCase(opt.flag), opt.flag);
    for (const alias of namesOf(opt.aliases)) {
      if (!KEBAB.test(alias))
        throw new OptionDefinitionError(`--${opt.flag}: alias "${alias}" is not kebab-case`);
      if (RESERVED_FLAGS.includes(alias)) throw new OptionDefinitionError(`alias --${alias} is reserved`);
      claim('flag', alias, opt.flag);
    }
    for (const env of namesOf(opt.env)) {
      if (!ENV_NAME.test(env)) throw new OptionDefinitionError(`--${opt.flag}: bad env name "${env}"`);
      claim('env', env, opt.flag);
    }
    for (const key of namesOf(opt.paramsKey)) {
      if (key === '') throw new OptionDefinitionError(`--${opt.flag}: empty params key`);
      claim('params key', key, opt.flag);
    }
    const problem = defaultProblem(opt);
    if (problem !== undefined) throw new OptionDefinitionError(`--${opt.flag}: ${problem}`);
  }
  checked.add(options);
}

function defaultProblem(opt: OptionDef): string | undefined {
  switch (opt.type) {
    case 'int':
      if (opt.min !== undefined && opt.max !== undefined && opt.min > opt.max)
        return 'min is greater than max';
      if (opt.default === undefined) return undefined;
      if (!Number.isSafeInteger(opt.default)) return 'default is not an integer';
      if (opt.min !== undefined && opt.default < opt.min) return 'default is below min';
      if (opt.max !== undefined && opt.default > opt.max) return 'default is above max';
      return undefined;
    case 'port':
      if (opt.default === undefined) return undefined;
      return Number.isInteger(opt.default) && opt.default >= 0 && opt.default <= 65535
        ? undefined
        : 'default is not a port';
    case 'duration':
      for (const [what, v] of [
        ['default', opt.default],
        ['min', opt.min],
        ['max', opt.max],
      ] as const) {
        if (typeof v === 'string' && typeof parseDurationNs(v) !== 'bigint')
          return `${what} is not a duration`;
        if (typeof v === 'number' && !(Number.isFinite(v) && v >= 0)) return `${what} is not a duration`;
      }
      return undefined;
    case 'enum':
      if (opt.values.length === 0) return 'enum has no values';
      return opt.default === undefined || opt.values.includes(opt.default)
        ? undefined
        : 'default is not one of the values';
    case 'host-port':
      if (opt.defaultPort === undefined) return undefined;
      return Number.isInteger(opt.defaultPort) && opt.defaultPort >= 0 && opt.defaultPort <= 65535
        ? undefined
        : 'defaultPort is not a port';
    case 'regex':
      if (opt.default === undefined) return undefined;
      try {
        new RegExp(opt.default, opt.flags);
        return undefined;
      } catch {
        return 'default is not a valid regular expression';
      }
    default:
      return undefined;
  }
}
