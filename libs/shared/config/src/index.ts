export {
  ARGOCD_AGENT_GAPS,
  type ArgocdAgentGap,
  type ArgocdAgentGapKind,
  type ArgocdAgentName,
  describeArgocdAgentGap,
  findArgocdAgentGap,
} from './argocd-agent-catalog.js';
export { configSummary, type SummaryEntry } from './config-summary.js';
export { assertValidOptionTable, defineOption, defineOptions, RESERVED_FLAGS } from './define-options.js';
export { type BareNumberUnit, formatDuration, type ParseDurationOptions, parseDuration } from './duration.js';
export {
  ConfigError,
  ConfigErrors,
  type ConfigProblem,
  InvalidDurationError,
  OptionDefinitionError,
} from './errors.js';
export {
  defaultConfig,
  type EnvLike,
  formatSource,
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
} from './load-config.js';
export {
  type AppNameRegistry,
  type AppNames,
  appNameRegistry,
  appNamesOf,
  type ConfigFamily,
  FAMILY_ENV_PREFIX,
  FAMILY_PARAMS_PREFIX,
  type OptionNames,
} from './name-registry.js';
export type {
  BooleanOption,
  CamelCase,
  ConfigSources,
  DurationOption,
  EnumOption,
  FileOption,
  HostPort,
  HostPortOption,
  InferConfig,
  IntOption,
  ListOption,
  OptionBaseValue,
  OptionCommon,
  OptionDef,
  OptionType,
  OptionValue,
  PortOption,
  RegexOption,
  StringOption,
  UrlOption,
  ValueSource,
} from './option-types.js';
export { PARAMS_CONFIGMAP_NAME, type ParamsFile, readParamsFile } from './params-file.js';
export { wantsHelp } from './parse-argv.js';
export { CONFIG_ERROR_EXIT_CODE, type ParseOrExitOptions, parseOrExit } from './parse-or-exit.js';
export { checkPath } from './parse-value.js';
export { type HelpOptions, renderHelp, renderMarkdownTable } from './render-help.js';
export {
  describeForeignFlag,
  findUnusedNames,
  logUnusedNames,
  type UnusedName,
  type UnusedNameCheck,
  type UnusedNameLog,
} from './unused-names.js';
