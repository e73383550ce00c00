// The workspace's rules on who may import what, checked over every TypeScript import of every
// app and lib (run by `npm test` as the workspace project's `boundaries` target). Each failure
// names its rule, the importing file and the import. The rules and tags are described in the
// README ("Layout: rooms and rules").
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { projectDirs } from './workspace-projects.mjs';

const SIDES = ['principal', 'agent', 'shared', 'testing'];
const BUILTINS = new Set(builtinModules);

/** Rule names, as they appear in messages. */
export const RULES = {
  tags: 'project-tags',
  appImportsApp: 'apps-never-import-apps',
  agentImportsPrincipal: 'agent-never-imports-principal',
  principalImportsAgent: 'principal-never-imports-agent',
  sharedImportsSide: 'shared-imports-only-shared',
  testingOutsideTests: 'testing-only-in-tests',
  relativeEscape: 'imports-through-package-names',
  undeclared: 'declared-dependencies',
  unusedDependency: 'no-unused-dependencies',
  tsconfigReference: 'tsconfig-references',
  buildReference: 'build-references-every-project',
  cycle: 'no-cycles',
  sleepInTest: 'no-sleep-in-tests',
};

// A timed wait in a test usually stands in for an event (and proves absence by hoping). Flagged
// unless the line says why it is not: `// wait-ok: <reason>` (pacing retries, a fault's delay).
const SLEEP = /\bawait\s+(?:sleep|delay)\(|setTimeout\(\s*(?:r|res|resolve)\b/;
const WAIT_OK = /\/\/\s*wait-ok:\s*\S/;

function walk(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|mts|cts)$/.test(entry) && !entry.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** tsconfig files may carry comments and trailing commas. */
function readTsconfig(file) {
  const { config, error } = ts.readConfigFile(file, ts.sys.readFile);
  if (error) throw new Error(`${file}: ${ts.flattenDiagnosticMessageText(error.messageText, '\n')}`);
  return config;
}

/** The package a bare specifier names: `@scope/name` or `name`, without a subpath. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function loadProjects(root) {
  const projects = [];
  for (const { group, dir } of projectDirs(root)) {
    const pkg = readJson(path.join(root, dir, 'package.json'));
    const tags = pkg.nx?.tags ?? [];
    projects.push({
      root: dir,
      group,
      packageName: pkg.name,
      pkg,
      tags,
      type: tags.filter((t) => t.startsWith('type:')).map((t) => t.slice(5)),
      side: tags.filter((t) => t.startsWith('side:')).map((t) => t.slice(5)),
    });
  }
  return projects;
}

/**
 * Every rule over the workspace at `root`; returns the violations (empty when it conforms), each
 * `{ rule, file, import?, message }` with `file` relative to `root`.
 */
export function checkWorkspace(root) {
  const violations = [];
  const report = (rule, file, imported, message) =>
    violations.push({ rule, file, ...(imported === undefined ? {} : { import: imported }), message });
  const projects = loadProjects(root);
  const byPackage = new Map(projects.map((p) => [p.packageName, p]));

  for (const p of projects) {
    const file = `${p.root}/package.json`;
    const wantType = p.group === 'apps' ? 'app' : 'lib';
    if (p.type.length !== 1 || p.type[0] !== wantType)
      report(
        RULES.tags,
        file,
        undefined,
        `needs exactly one type tag, "type:${wantType}" (has ${JSON.stringify(p.tags)})`,
      );
    if (p.side.length !== 1 || !SIDES.includes(p.side[0]))
      report(
        RULES.tags,
        file,
        undefined,
        `needs exactly one side tag of ${SIDES.map((s) => `side:${s}`).join(', ')} (has ${JSON.stringify(p.tags)})`,
      );
  }

  /** Workspace packages each project's sources import (for references and cycles). */
  const srcWorkspaceDeps = new Map();
  for (const p of projects) {
    const side = p.side[0];
    const srcImports = new Set();
    const testImports = new Set();
    for (const abs of walk(path.join(root, p.root, 'src')).concat(walk(path.join(root, p.root, 'test')))) {
      const file = path.relative(root, abs).split(path.sep).join('/');
      const inTest = file.startsWith(`${p.root}/test/`) || /\.test\.[mc]?ts$/.test(file);
      const text = readFileSync(abs, 'utf8');
      if (inTest)
        for (const [i, line] of text.split('\n').entries())
          if (SLEEP.test(line) && !WAIT_OK.test(line))
            report(
              RULES.sleepInTest,
              `${file}:${i + 1}`,
              undefined,
              'timed wait in a test: wait for the event instead (absence: a later event that proves it), or say why with `// wait-ok: <reason>`',
            );
      const { importedFiles } = ts.preProcessFile(text, true, false);
      for (const { fileName: spec } of importedFiles) {
        if (spec.startsWith('.')) {
          const target = path
            .relative(root, path.resolve(path.dirname(abs), spec))
            .split(path.sep)
            .join('/');
          if (!target.startsWith(`${p.root}/`))
            report(
              RULES.relativeEscape,
              file,
              spec,
              `reaches outside ${p.root}; import the other project by its package name`,
            );
          const other = projects.find((o) => o !== p && target.startsWith(`${o.root}/`));
          if (other && p.group === 'apps' && other.group === 'apps')
            report(
              RULES.appImportsApp,
              file,
              spec,
              `app ${p.root} imports app ${other.root}; move what they share into a lib`,
            );
          continue;
        }
        if (spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(packageOf(spec))) continue;
        const name = packageOf(spec);
        if (name === p.packageName) continue;
        (inTest ? testImports : srcImports).add(name);
        const target = byPackage.get(name);
        if (!target) continue;
        const targetSide = target.side[0];
        if (p.group === 'apps' && target.group === 'apps')
          report(
            RULES.appImportsApp,
            file,
            spec,
            `app ${p.root} imports app ${target.root}; move what they share into a lib`,
          );
        if (targetSide === 'testing' && !inTest && side !== 'testing')
          report(
            RULES.testingOutsideTests,
            file,
            spec,
            `${target.root} is side:testing: only tests and side:testing projects may import it`,
          );
        if (inTest) continue; // tests drive both ends of a tunnel; the side rules hold for shipped code
        if (side === 'agent' && targetSide === 'principal')
          report(
            RULES.agentImportsPrincipal,
            file,
            spec,
            `side:agent code imports side:principal ${target.root}; move what both need into a side:shared lib`,
          );
        if (side === 'principal' && targetSide === 'agent')
          report(
            RULES.principalImportsAgent,
            file,
            spec,
            `side:principal code imports side:agent ${target.root}; move what both need into a side:shared lib`,
          );
        if (side === 'shared' && targetSide !== 'shared' && targetSide !== undefined)
          report(
            RULES.sharedImportsSide,
            file,
            spec,
            `side:shared code imports side:${targetSide} ${target.root}; shared code may use shared libs only`,
          );
      }
    }
    const deps = p.pkg.dependencies ?? {};
    const devDeps = p.pkg.devDependencies ?? {};
    const pkgFile = `${p.root}/package.json`;
    for (const name of [...srcImports].sort())
      if (!(name in deps))
        report(
          RULES.undeclared,
          pkgFile,
          name,
          `${p.root}/src imports ${name}, which "dependencies" does not declare`,
        );
    for (const name of [...testImports].sort())
      if (!(name in deps) && !(name in devDeps) && !srcImports.has(name))
        report(
          RULES.undeclared,
          pkgFile,
          name,
          `${p.root} tests import ${name}, which neither "dependencies" nor "devDependencies" declares`,
        );
    for (const name of Object.keys(deps).sort())
      if (!srcImports.has(name))
        report(
          RULES.unusedDependency,
          pkgFile,
          name,
          `"dependencies" declares ${name}, which nothing in ${p.root}/src imports`,
        );

    const workspaceDeps = [...srcImports].filter((n) => byPackage.has(n)).map((n) => byPackage.get(n).root);
    srcWorkspaceDeps.set(p.root, workspaceDeps);
    const tsconfigFile = path.join(root, p.root, 'tsconfig.json');
    if (existsSync(tsconfigFile)) {
      const refs = (readTsconfig(tsconfigFile).references ?? []).map((r) =>
        path
          .relative(root, path.resolve(root, p.root, r.path))
          .split(path.sep)
          .join('/'),
      );
      for (const dep of workspaceDeps)
        if (!refs.includes(dep))
          report(
            RULES.tsconfigReference,
            `${p.root}/tsconfig.json`,
            dep,
            `src imports ${dep} but tsconfig.json has no reference to it (tsc -b would build in the wrong order)`,
          );
      for (const ref of refs)
        if (!workspaceDeps.includes(ref))
          report(
            RULES.tsconfigReference,
            `${p.root}/tsconfig.json`,
            ref,
            `references ${ref}, which src does not import`,
          );
    }
  }

  const buildFile = path.join(root, 'tsconfig.build.json');
  if (existsSync(buildFile)) {
    const refs = (readTsconfig(buildFile).references ?? []).map((r) =>
      path.normalize(r.path).split(path.sep).join('/'),
    );
    for (const p of projects)
      if (existsSync(path.join(root, p.root, 'tsconfig.json')) && !refs.includes(p.root))
        report(
          RULES.buildReference,
          'tsconfig.build.json',
          p.root,
          `no reference to ${p.root}, so \`npm run build\` skips it`,
        );
  }

  // Cycles among the projects' shipped code (tests may close a loop: they are not built).
  const state = new Map();
  const stack = [];
  const visit = (node) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of srcWorkspaceDeps.get(node) ?? []) {
      if (state.get(next) === 'open') {
        const cycle = [...stack.slice(stack.indexOf(next)), next];
        report(RULES.cycle, `${node}/package.json`, next, `dependency cycle: ${cycle.join(' -> ')}`);
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const p of projects) if (!state.has(p.root)) visit(p.root);
  return violations;
}

export function formatViolation(v) {
  return `[${v.rule}] ${v.file}${v.import === undefined ? '' : `: ${JSON.stringify(v.import)}`}: ${v.message}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
  const violations = checkWorkspace(root);
  for (const v of violations) console.error(formatViolation(v));
  if (violations.length > 0) {
    console.error(`workspace rules: ${violations.length} violation(s)`);
    process.exit(1);
  }
  console.log('workspace rules: every import is allowed, declared and referenced');
}
