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

/** The names one app reads. */
export interface AppNames {
  readonly family: ConfigFamily;
  readonly flags: readonly string[];
  readonly env: readonly string[];
  readonly params: readonly string[];
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
  };
}

/** This project's apps, generated from their option tables by `npm run docs:flags`. */
export function appNameRegistry(): AppNameRegistry {
  return APP_NAMES;
}
