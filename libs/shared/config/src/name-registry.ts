import { APP_NAMES } from './gen/app-names.js';
import { namesOf } from './names.js';
import type { OptionDef } from './option-types.js';

/**
 * Apps that share one params ConfigMap and one env prefix: the principal services read
 * `principal.*` / `ARGOCD_PRINCIPAL_*`, the agent `agent.*` / `ARGOCD_AGENT_*`.
 */
export type ConfigFamily = 'principal' | 'agent';

export const FAMILY_ENV_PREFIX: Readonly<Record<ConfigFamily, string>> = {
  principal: 'ARGOCD_PRINCIPAL_',
  agent: 'ARGOCD_AGENT_',
};

export const FAMILY_PARAMS_PREFIX: Readonly<Record<ConfigFamily, string>> = {
  principal: 'principal.',
  agent: 'agent.',
};

/** One option's names: its flag (and aliases), env vars and params keys, primary first. */
export interface OptionNames {
  readonly flag: string;
  readonly aliases: readonly string[];
  readonly env: readonly string[];
  readonly params: readonly string[];
}

/** The names one app reads. */
export interface AppNames {
  readonly family: ConfigFamily;
  readonly flags: readonly string[];
  readonly env: readonly string[];
  readonly params: readonly string[];
  /** The same names by option, so one can be translated into another (env var → params key). */
  readonly options: readonly OptionNames[];
}

/** Every app's names, keyed by app; `app-names.generated.ts` holds this project's. */
export type AppNameRegistry = Readonly<Record<string, AppNames>>;

/** The names an option table reads (flags with their aliases, env vars, params keys). */
export function appNamesOf(
  family: ConfigFamily,
  options: readonly OptionDef[],
  paramsFileEnv?: string | readonly string[],
): AppNames {
  return {
    family,
    flags: options.flatMap((o) => [o.flag, ...namesOf(o.aliases)]).sort(),
    env: [...new Set([...options.flatMap((o) => namesOf(o.env)), ...namesOf(paramsFileEnv)])].sort(),
    params: [...new Set(options.flatMap((o) => namesOf(o.paramsKey)))].sort(),
    options: options.map((o) => ({
      flag: o.flag,
      aliases: [...namesOf(o.aliases)],
      env: [...namesOf(o.env)],
      params: [...namesOf(o.paramsKey)],
    })),
  };
}

/** This project's apps, generated from their option tables by `npm run docs:flags`. */
export function appNameRegistry(): AppNameRegistry {
  return APP_NAMES;
}
