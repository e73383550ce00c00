// Keeps docs/argocd-agent-names.md in step with the code. argocd-agent's names (its flags, env
// vars, params keys and defaults: the first three columns, taken from its source at the commit
// the page names) stay as written; every other column is regenerated: for each pullplane app of
// the family, from the name registry its option table generates (libs/shared/config/src/gen),
// and the last column from the catalog of argocd-agent features pullplane does not have.
// `--check` fails when the page differs from what the code says now.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const FILE = path.join(root, 'docs/argocd-agent-names.md');
const { appNameRegistry, ARGOCD_AGENT_GAPS } = await import(
  pathToFileURL(path.join(root, 'libs/shared/config/dist/index.js')).href
);
const APP_NAMES = appNameRegistry();

/** The apps of each family, in the page's column order. */
const APPS = {
  principal: ['stream-gateway', 'resource-proxy', 'redis-proxy', 'extension-proxy'],
  agent: ['agent'],
};
const REASON = { missing: 'not in pullplane', implied: 'no use', 'not-yet': 'not yet' };

const strip = (flag) => flag.replace(/^--/, '');

/** One app's cell for one argocd-agent name: which of its names the app reads, and how. */
function cell(app, { flag, env, key }) {
  const names = APP_NAMES[app];
  const f = strip(flag);
  const option =
    names.options.find((o) => o.flag === f || o.aliases.includes(f)) ??
    (env && names.options.find((o) => o.env.includes(env))) ??
    (key && names.options.find((o) => o.params.includes(key)));
  const letter = (has, mark, name) => (name ? (has ? mark : '-') : '.');
  if (!option) return `${letter(false, 'F', flag)}${letter(false, 'E', env)}${letter(false, 'K', key)}`;
  const F = option.flag === f || option.aliases.includes(f);
  const E = Boolean(env) && option.env.includes(env);
  const K = Boolean(key) && option.params.includes(key);
  let text = `${letter(F, 'F', flag)}${letter(E, 'E', env)}${letter(K, 'K', key)}`;
  if (!F) text += ` as --${option.flag}`;
  // Where argocd-agent has the name and this app reads another for the same option.
  if (env && !E && option.env[0]) text += ` (env=${option.env[0]})`;
  if (key && !K && option.params[0]) text += ` (key=${option.params[0]})`;
  return text;
}

function reason(family, { flag, env, key }) {
  const gap = ARGOCD_AGENT_GAPS.find((g) =>
    g.names.some(
      (n) =>
        n.family === family &&
        ((n.flag && n.flag === strip(flag)) || (env && n.env === env) || (key && n.key === key)),
    ),
  );
  return gap ? `${REASON[gap.kind]}: ${gap.what}` : '';
}

const cells = (row) =>
  row
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());

const text = readFileSync(FILE, 'utf8');
let family;
const problems = [];
const next = text
  .split('\n')
  .map((line) => {
    const h = /^## (principal|agent)\s*$/.exec(line);
    if (h) family = h[1];
    if (!family || !line.startsWith('|')) return line;
    const c = cells(line);
    if (c[0] === 'argocd-agent flag')
      return `| argocd-agent flag | env | params key (default) | ${APPS[family].join(' | ')} | not read because |`;
    if (/^-+$/.test(c[0]))
      return `|${Array(3 + APPS[family].length + 1)
        .fill('---')
        .join('|')}|`;
    const [flag, envCell, keyDefault] = c;
    // argocd-agent declares some flags without an env var (`None` in its source).
    const env = envCell === 'None' ? '' : envCell;
    const key = keyDefault.replace(/\s*\(.*\)$/, '');
    const name = { flag, env, key };
    const apps = APPS[family].map((app) => cell(app, name));
    const read = apps.some((a) => /[FEK]|as --/.test(a));
    const why = read ? '' : reason(family, name);
    if (!read && !why) problems.push(`${family} ${flag}: read by no app and not in the argocd-agent catalog`);
    return `| ${[flag, envCell, keyDefault, ...apps, why].join(' | ')} |`.replace(/ {2,}\|/g, ' |');
  })
  .join('\n');
for (const p of problems) console.error(p);
if (check) {
  if (next !== text || problems.length) {
    console.error('docs/argocd-agent-names.md is stale: run `npm run docs:names`');
    process.exit(1);
  }
  console.log('docs/argocd-agent-names.md: up to date');
} else {
  writeFileSync(FILE, next);
  console.log('wrote docs/argocd-agent-names.md');
  if (problems.length) process.exit(1);
}
