import { ConfigError } from './errors.js';
import { type LoadConfigOptions, type LoadedConfig, loadConfig } from './load-config.js';
import type { OptionDef } from './option-types.js';
import { wantsHelp } from './parse-argv.js';
import { renderHelp } from './render-help.js';

export interface ParseOrExitOptions<T extends readonly OptionDef[]> extends LoadConfigOptions<T> {
  readonly appName: string;
  /** One-line summary for the help text. */
  readonly summary?: string;
  /** Injectable for tests; default writes to process.stdout / process.stderr. */
  readonly stdout?: (text: string) => void;
  readonly stderr?: (text: string) => void;
  /** Injectable for tests; default `process.exit`. Must not return (throw in tests). */
  readonly exit?: (code: number) => never;
}

/** Exit code for bad configuration, like Go's flag package uses for usage errors. */
export const CONFIG_ERROR_EXIT_CODE = 2;

/**
 * The app entry-point wrapper: prints help and exits 0 on `--help`, prints the `ConfigError`
 * and exits 2 on bad configuration, otherwise returns the loaded config.
 */
export function parseOrExit<const T extends readonly OptionDef[]>(
  options: T,
  opts: ParseOrExitOptions<T>,
): LoadedConfig<T> {
  const stdout = opts.stdout ?? ((t: string) => void process.stdout.write(t));
  const stderr = opts.stderr ?? ((t: string) => void process.stderr.write(t));
  const exit = opts.exit ?? ((code: number): never => process.exit(code));
  if (wantsHelp(opts.argv)) {
    const help = { ...(opts.paramsFileEnv ? { paramsFileEnv: opts.paramsFileEnv } : {}) };
    stdout(
      renderHelp(opts.appName, options, { ...help, ...(opts.summary ? { summary: opts.summary } : {}) }),
    );
    return exit(0);
  }
  try {
    return loadConfig(options, opts);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    stderr(`${opts.appName}: ${err.message}\nRun '${opts.appName} --help' for usage.\n`);
    return exit(CONFIG_ERROR_EXIT_CODE);
  }
}
