import { constraintsOf, defaultOf, placeholderOf } from './describe-option.js';
import { namesOf } from './names.js';
import type { OptionDef } from './option-types.js';

export interface HelpOptions {
  /** Env vars that name the params file, listed under `--params-file`. */
  readonly paramsFileEnv?: string | readonly string[];
  /** One-line summary printed under the usage line. */
  readonly summary?: string;
}

const PARAMS_FILE_DESCRIPTION =
  'argocd-agent-params as a ConfigMap manifest, a flat YAML map or a mounted ConfigMap directory.';

/** Usage text for `--help`: each flag with its env vars, params keys, default and description. */
export function renderHelp(appName: string, options: readonly OptionDef[], help: HelpOptions = {}): string {
  const lines = [`Usage: ${appName} [flags]`, ''];
  if (help.summary) lines.push(help.summary, '');
  lines.push('Flags:');
  for (const opt of options) {
    const ph = placeholderOf(opt);
    lines.push(`  --${opt.flag}${ph ? ` ${ph}` : ''}`);
    lines.push(`      ${opt.description}`);
    const aliases = namesOf(opt.aliases);
    if (aliases.length > 0) lines.push(`      also: ${aliases.map((a) => `--${a}`).join(', ')}`);
    const facts: string[] = [];
    const constraints = constraintsOf(opt);
    if (constraints) facts.push(constraints);
    if (opt.required) facts.push('required');
    const def = defaultOf(opt);
    if (def !== undefined) facts.push(`default ${def}`);
    if (facts.length > 0) lines.push(`      (${facts.join('; ')})`);
    const env = namesOf(opt.env);
    if (env.length > 0) lines.push(`      env: ${env.join(', ')}`);
    const keys = namesOf(opt.paramsKey);
    if (keys.length > 0) lines.push(`      params: ${keys.join(', ')}`);
  }
  lines.push('  --params-file <path>', `      ${PARAMS_FILE_DESCRIPTION}`);
  const fileEnv = namesOf(help.paramsFileEnv);
  if (fileEnv.length > 0) lines.push(`      env: ${fileEnv.join(', ')}`);
  lines.push('  -h, --help', '      Show this help and exit.', '');
  lines.push(
    'Precedence: flag > env > params file > default. Empty env and params values count as unset.',
    'Booleans accept --flag, --flag=false and --no-flag.',
    '',
  );
  return lines.join('\n');
}

/** Markdown table (flag | env | params key | default | description) for app READMEs. */
export function renderMarkdownTable(options: readonly OptionDef[], help: HelpOptions = {}): string {
  const rows = ['| Flag | Env | Params key | Default | Description |', '| --- | --- | --- | --- | --- |'];
  const code = (names: readonly string[]) => names.map((n) => `\`${n}\``).join('<br>');
  for (const opt of options) {
    const def = defaultOf(opt);
    const constraints = constraintsOf(opt);
    const desc = [opt.description, constraints ? `(${constraints})` : '', opt.required ? '**Required.**' : '']
      .filter(Boolean)
      .join(' ');
    rows.push(
      row([
        [opt.flag, ...namesOf(opt.aliases)].map((f) => `\`--${f}\``).join('<br>'),
        code(namesOf(opt.env)),
        code(namesOf(opt.paramsKey)),
        def === undefined ? '' : `\`${def}\``,
        desc,
      ]),
    );
  }
  rows.push(row(['`--params-file`', code(namesOf(help.paramsFileEnv)), '', '', PARAMS_FILE_DESCRIPTION]));
  return `${rows.join('\n')}\n`;
}

function row(cells: readonly string[]): string {
  return `| ${cells.map((c) => c.replace(/\|/g, '\\|').replace(/\n/g, ' ')).join(' | ')} |`;
}
