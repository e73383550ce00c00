import {
  type ArgocdAgentGapMatch,
  argocdAgentGapNames,
  describeArgocdAgentGap,
  findArgocdAgentGap,
} from './argocd-agent-catalog.js';
import {
  type AppNameRegistry,
  type AppNames,
  appNameRegistry,
  appNamesOf,
  type ConfigFamily,
  FAMILY_ENV_PREFIX,
  FAMILY_PARAMS_PREFIX,
} from './name-registry.js';
import { editDistance } from './names.js';
import type { OptionDef } from './option-types.js';
import type { ParamsFile } from './params-file.js';

/** Who is loading: the app's name and the family whose ConfigMap and env prefix it shares. */
export interface UnusedNameCheck {
  readonly app: string;
  readonly family: ConfigFamily;
  /** Every app's names; this project's generated registry by default. */
  readonly registry?: AppNameRegistry;
}

/** A params key or env var that no option of the app reads, and what that means. */
export interface UnusedName {
  readonly source: 'env' | 'params';
  readonly name: string;
  /** `warn` when a value may have been meant to change something; `info` when nothing is lost. */
  readonly level: 'warn' | 'info';
  readonly message: string;
  /** The argocd-agent feature the name belongs to, when it is one of argocd-agent's. */
  readonly feature?: string;
  /** The nearest name the family does read. */
  readonly suggestion?: string;
}

type Kind = 'env' | 'key';
const FAMILIES: readonly ConfigFamily[] = ['principal', 'agent'];
const FAMILY_LABEL: Record<ConfigFamily, string> = { principal: 'principal service', agent: 'agent' };

/**
 * Names in the params file and `ARGOCD_PRINCIPAL_*` / `ARGOCD_AGENT_*` env vars that the
 * app does not read, each classified: read by another app of the same family (not reported:
 * the ConfigMap and env prefix are shared), one of argocd-agent's features (named as such),
 * another family's setting, or nobody's (with the nearest known name). Empty values are
 * unset and never reported.
 */
export function findUnusedNames(
  options: readonly OptionDef[],
  check: UnusedNameCheck,
  input: {
    env: Readonly<Record<string, string | undefined>>;
    params: ParamsFile | undefined;
    paramsFileEnv?: string | readonly string[];
  },
): UnusedName[] {
  const registry = check.registry ?? appNameRegistry();
  const own = appNamesOf(check.family, options, input.paramsFileEnv);
  const out: UnusedName[] = [];
  if (input.params) {
    const file = input.params.path;
    for (const [key, value] of input.params.entries) {
      if (value === '' || own.params.includes(key)) continue;
      const found = classify(check, own, registry, 'key', key, value);
      if (found)
        out.push({
          source: 'params',
          name: key,
          ...found,
          message: `params key ${key} in ${file} ${found.message}`,
        });
    }
  }
  for (const [name, value] of Object.entries(input.env)) {
    if (value === undefined || value === '' || own.env.includes(name)) continue;
    // argocd-agent's unprefixed names (REDIS_USERNAME…) are reported too when they are its features'.
    const prefixed = FAMILIES.some((f) => name.startsWith(FAMILY_ENV_PREFIX[f]));
    if (!prefixed && !findArgocdAgentGap(check.family, 'env', name)) continue;
    const found = classify(check, own, registry, 'env', name, value);
    if (found) out.push({ source: 'env', name, ...found, message: `env ${name} ${found.message}` });
  }
  return out.sort((x, y) => x.name.localeCompare(y.name));
}

/** For unknown flags: whose flag it is, or which argocd-agent feature it belongs to. */
export function describeForeignFlag(check: UnusedNameCheck, flag: string): string | undefined {
  const registry = check.registry ?? appNameRegistry();
  const gap = findArgocdAgentGap(check.family, 'flag', flag);
  if (gap) return describeArgocdAgentGap(gap.gap);
  const owners = Object.entries(registry)
    .filter(([app, names]) => app !== check.app && names.flags.includes(flag))
    .map(([app]) => app);
  return owners.length > 0 ? `a flag of ${owners.join(' and ')}, not of ${check.app}` : undefined;
}

type Classified = Omit<UnusedName, 'source' | 'name'>;

function classify(
  check: UnusedNameCheck,
  own: AppNames,
  registry: AppNameRegistry,
  kind: Kind,
  name: string,
  value: string,
): Classified | undefined {
  const field = kind === 'env' ? 'env' : 'params';
  const family = familyOf(kind, name) ?? check.family;
  // Another app of the same family reads it: the ConfigMap and the env prefix are shared.
  for (const [app, names] of Object.entries(registry)) {
    if (app !== check.app && names.family === check.family && names[field].includes(name)) return undefined;
  }
  if (family !== check.family) {
    const reader = Object.entries(registry).find(([, n]) => n.family === family && n[field].includes(name));
    return {
      level: 'warn',
      message: `is ${reader ? `${reader[0]}'s` : `an ${FAMILY_LABEL[family]}`} setting, not ${check.app}'s; ignored`,
    };
  }
  const gap = findArgocdAgentGap(family, kind, name);
  if (gap) return describeGap(gap, value);
  const suggestion = nearest(name, candidates(check.family, own, registry, kind));
  return {
    level: 'warn',
    message: `is read by no ${FAMILY_LABEL[check.family]}${suggestion ? ` (did you mean ${suggestion}?)` : ''}; ignored`,
    ...(suggestion ? { suggestion } : {}),
  };
}

function describeGap(match: ArgocdAgentGapMatch, value: string): Classified {
  const inert = match.name.inert?.includes(value.trim().toLowerCase()) ?? false;
  const level = inert || match.gap.kind === 'implied' ? 'info' : 'warn';
  return {
    level,
    message: `belongs to ${describeArgocdAgentGap(match.gap)}; ignored${inert ? ' (its value leaves the feature off)' : ''}`,
    feature: match.gap.what,
  };
}

function familyOf(kind: Kind, name: string): ConfigFamily | undefined {
  const prefixes = kind === 'env' ? FAMILY_ENV_PREFIX : FAMILY_PARAMS_PREFIX;
  return FAMILIES.find((f) => name.startsWith(prefixes[f]));
}

function candidates(family: ConfigFamily, own: AppNames, registry: AppNameRegistry, kind: Kind): string[] {
  const field = kind === 'env' ? 'env' : 'params';
  const siblings = Object.values(registry)
    .filter((n) => n.family === family)
    .flatMap((n) => n[field]);
  return [...new Set([...own[field], ...siblings, ...argocdAgentGapNames(family, kind)])];
}

function nearest(name: string, known: readonly string[]): string | undefined {
  // Farther than this is a different name, not a typo of one.
  const limit = Math.max(2, Math.floor(name.length / 6));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const k of known) {
    if (Math.abs(k.length - name.length) > limit) continue;
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/** The part of a pino logger the report needs. */
export interface UnusedNameLog {
  warn(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
}

/** Logs each unused name once, at its level, with the name and where it came from. */
export function logUnusedNames(unused: readonly UnusedName[], log: UnusedNameLog): void {
  for (const u of unused) {
    log[u.level](
      {
        configName: u.name,
        configSource: u.source,
        ...(u.feature ? { argocdAgentFeature: u.feature } : {}),
        ...(u.suggestion ? { didYouMean: u.suggestion } : {}),
      },
      u.message,
    );
  }
}
