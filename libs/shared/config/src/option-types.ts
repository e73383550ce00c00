import type { BareNumberUnit } from './duration.js';

/** Fields shared by every option. */
export interface OptionCommon {
  /** kebab-case flag name without dashes, e.g. `listen-port`; the config key is its camelCase form. */
  readonly flag: string;
  /**
   * Other flag names accepted for this option (argocd-agent's, where it spells the flag
   * differently); shown next to the flag in help and docs.
   */
  readonly aliases?: string | readonly string[];
  /** Environment variable names; the first is primary, the rest are accepted aliases. */
  readonly env?: string | readonly string[];
  /** `argocd-agent-params` keys, e.g. `principal.listen.port`; the first is primary. */
  readonly paramsKey?: string | readonly string[];
  readonly description: string;
  /** Never echo the value in errors, help defaults or config summaries. */
  readonly secret?: boolean;
  /** Fail when no source provides a value and there is no default. */
  readonly required?: boolean;
  /** Value placeholder in help, e.g. `<addr>`; derived from the type when omitted. */
  readonly placeholder?: string;
}

export interface StringOption extends OptionCommon {
  readonly type: 'string';
  readonly default?: string;
  /** The whole value must match. */
  readonly pattern?: RegExp;
}

/** Defaults to `false`; `--flag`, `--flag=true|false`, `--no-flag`. */
export interface BooleanOption extends OptionCommon {
  readonly type: 'boolean';
  readonly default?: boolean;
}

export interface IntOption extends OptionCommon {
  readonly type: 'int';
  readonly default?: number;
  readonly min?: number;
  readonly max?: number;
}

/** 0–65535; 0 conventionally means "pick a free port". */
export interface PortOption extends OptionCommon {
  readonly type: 'port';
  readonly default?: number;
}

/** Go duration string (`30s`, `1m30s`); the config value is milliseconds. Negative values are rejected. */
export interface DurationOption extends OptionCommon {
  readonly type: 'duration';
  /** Milliseconds or a duration string. */
  readonly default?: number | string;
  readonly min?: number | string;
  readonly max?: number | string;
  /** Accept bare numbers in this unit (argocd-agent never does; some legacy settings do). */
  readonly bareNumberUnit?: BareNumberUnit;
}

export interface EnumOption<V extends string = string> extends OptionCommon {
  readonly type: 'enum';
  readonly values: readonly V[];
  readonly default?: V;
}

/** Comma-separated; repeated flags append. Defaults to `[]`. */
export interface ListOption extends OptionCommon {
  readonly type: 'list';
  readonly default?: readonly string[];
}

/** Absolute URL, kept as the given string. */
export interface UrlOption extends OptionCommon {
  readonly type: 'url';
  readonly default?: string;
  /** Allowed schemes without the colon, e.g. `['https', 'http']`. */
  readonly schemes?: readonly string[];
}

/** `host:port` or `[ipv6]:port`; the value is `{ host, port }`. */
export interface HostPortOption extends OptionCommon {
  readonly type: 'host-port';
  readonly default?: string;
  /** Port used when the value has none; without it the port is mandatory. */
  readonly defaultPort?: number;
}

/** A path that must exist when the configuration is loaded. */
export interface FileOption extends OptionCommon {
  readonly type: 'file';
  readonly default?: string;
  /** What must exist at the path; `file` by default. */
  readonly kind?: 'file' | 'directory' | 'any';
  /**
   * `false`: the path is only checked by the app, when the feature that uses it is on
   * (argocd-agent's params ship mount paths such as `/app/config/redis-tls/ca.crt` whether or
   * not the feature is enabled). Default true.
   */
  readonly mustExist?: boolean;
}

/** JavaScript regular expression syntax (close to, not identical with, Go RE2). */
export interface RegexOption extends OptionCommon {
  readonly type: 'regex';
  readonly default?: string;
  readonly flags?: string;
}

export type OptionDef =
  | StringOption
  | BooleanOption
  | IntOption
  | PortOption
  | DurationOption
  | EnumOption
  | ListOption
  | UrlOption
  | HostPortOption
  | FileOption
  | RegexOption;

export type OptionType = OptionDef['type'];

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** `listen-port` → `listenPort`. */
export type CamelCase<S extends string> = S extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

/** The parsed value type of an option, ignoring presence. */
export type OptionBaseValue<O> = O extends { readonly type: 'string' | 'url' | 'file' }
  ? string
  : O extends { readonly type: 'boolean' }
    ? boolean
    : O extends { readonly type: 'int' | 'port' | 'duration' }
      ? number
      : O extends { readonly type: 'enum'; readonly values: readonly (infer V)[] }
        ? V
        : O extends { readonly type: 'list' }
          ? string[]
          : O extends { readonly type: 'host-port' }
            ? HostPort
            : O extends { readonly type: 'regex' }
              ? RegExp
              : never;

/** Booleans and lists always have a value; others only with a default or `required: true`. */
export type OptionValue<O> = O extends { readonly type: 'boolean' | 'list' }
  ? OptionBaseValue<O>
  : O extends { readonly default: unknown }
    ? OptionBaseValue<O>
    : O extends { readonly required: true }
      ? OptionBaseValue<O>
      : OptionBaseValue<O> | undefined;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The config object `loadConfig` returns for an option table. */
export type InferConfig<T extends readonly OptionDef[]> = Simplify<{
  readonly [O in T[number] as CamelCase<O['flag']>]: OptionValue<O>;
}>;

export type ValueSource =
  | { readonly kind: 'flag'; readonly name: string }
  | { readonly kind: 'env'; readonly name: string }
  | { readonly kind: 'params'; readonly name: string; readonly file: string }
  | { readonly kind: 'default' };

export type ConfigSources<T extends readonly OptionDef[]> = {
  readonly [K in keyof InferConfig<T>]: ValueSource;
};
