import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { checkWorkspace, formatViolation, RULES } from '../check-workspace.mjs';

interface Violation {
  rule: string;
  file: string;
  import?: string;
  message: string;
}
const check = checkWorkspace as (root: string) => Violation[];
const format = formatViolation as (v: Violation) => string;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = path.join(REPO, 'scripts/check-workspace.mjs');

interface ProjectSpec {
  side: string;
  type?: string;
  deps?: Record<string, string>;
  devDeps?: Record<string, string>;
  refs?: string[];
  files?: Record<string, string>;
}

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/** A workspace on disk: `projects` keyed by "apps/x" or "libs/<side>/x"; every project is in tsconfig.build.json. */
function workspace(projects: Record<string, ProjectSpec>, buildRefs?: string[]): string {
  const root = mkdtempSync(path.join(tmpdir(), 'pp-ws-'));
  roots.push(root);
  for (const [dir, spec] of Object.entries(projects)) {
    const group = dir.split('/')[0]!;
    const name = dir.split('/').at(-1)!;
    const abs = path.join(root, dir);
    mkdirSync(abs, { recursive: true });
    writeFileSync(
      path.join(abs, 'package.json'),
      JSON.stringify({
        name: `@ws/${group === 'apps' ? `app-${name}` : name}`,
        dependencies: spec.deps ?? {},
        devDependencies: spec.devDeps ?? {},
        nx: { tags: [`type:${spec.type ?? (group === 'apps' ? 'app' : 'lib')}`, `side:${spec.side}`] },
      }),
    );
    writeFileSync(
      path.join(abs, 'tsconfig.json'),
      JSON.stringify({ references: (spec.refs ?? []).map((r) => ({ path: path.relative(dir, r) })) }),
    );
    for (const [file, text] of Object.entries(spec.files ?? { 'src/index.ts': 'export const x = 1;\n' })) {
      mkdirSync(path.dirname(path.join(abs, file)), { recursive: true });
      writeFileSync(path.join(abs, file), text);
    }
  }
  writeFileSync(
    path.join(root, 'tsconfig.build.json'),
    JSON.stringify({ files: [], references: (buildRefs ?? Object.keys(projects)).map((p) => ({ path: p })) }),
  );
  return root;
}

const agentLib = { side: 'agent', files: { 'src/index.ts': 'export const agent = 1;\n' } };
const principalLib = { side: 'principal', files: { 'src/index.ts': 'export const principal = 1;\n' } };
const testingLib = { side: 'testing', files: { 'src/index.ts': 'export const fake = 1;\n' } };

describe('check-workspace', () => {
  it('passes on this repository', () => {
    expect(check(REPO).map(format)).toEqual([]);
  });

  it('passes on a workspace that follows every rule', () => {
    const root = workspace({
      'libs/shared/shared': {
        side: 'shared',
        deps: { pino: '^10' },
        files: { 'src/index.ts': "import 'pino';\n" },
      },
      'libs/agent/agent-core': {
        side: 'agent',
        deps: { '@ws/shared': '*' },
        devDeps: { '@ws/fake': '*', '@ws/principal-core': '*', vitest: '*' },
        refs: ['libs/shared/shared'],
        files: {
          'src/index.ts':
            "import { x } from '@ws/shared';\nimport { readFileSync } from 'node:fs';\nimport path from 'path';\n",
          'test/a.test.ts': "import '@ws/fake';\nimport '@ws/principal-core';\nimport 'vitest';\n",
        },
      },
      'libs/principal/principal-core': principalLib,
      'libs/testing/fake': testingLib,
    });
    expect(check(root)).toEqual([]);
  });

  it('refuses an app importing another app, by package name or by path', () => {
    const root = workspace({
      'apps/gateway': { side: 'principal' },
      'apps/proxy': {
        side: 'principal',
        deps: { '@ws/app-gateway': '*' },
        files: {
          'src/main.ts': "import { x } from '@ws/app-gateway';\n",
          'test/a.test.ts': "import { y } from '../../gateway/src/index.js';\n",
        },
      },
    });
    const messages = check(root).map(format);
    expect(messages).toContain(
      '[apps-never-import-apps] apps/proxy/src/main.ts: "@ws/app-gateway": app apps/proxy imports app apps/gateway; move what they share into a lib',
    );
    expect(messages).toContain(
      '[apps-never-import-apps] apps/proxy/test/a.test.ts: "../../gateway/src/index.js": app apps/proxy imports app apps/gateway; move what they share into a lib',
    );
  });

  it('refuses agent code importing principal code, and principal code importing agent code', () => {
    const root = workspace({
      'libs/principal/principal-core': principalLib,
      'libs/agent/agent-core': agentLib,
      'libs/agent/agent-redis': {
        side: 'agent',
        deps: { '@ws/principal-core': '*' },
        refs: ['libs/principal/principal-core'],
        files: { 'src/executor.ts': "import type { principal } from '@ws/principal-core';\n" },
      },
      'libs/principal/proxy': {
        side: 'principal',
        deps: { '@ws/agent-core': '*' },
        refs: ['libs/agent/agent-core'],
        files: { 'src/index.ts': "export * from '@ws/agent-core';\n" },
      },
    });
    expect(check(root).map(format)).toEqual([
      '[agent-never-imports-principal] libs/agent/agent-redis/src/executor.ts: "@ws/principal-core": side:agent code imports side:principal libs/principal/principal-core; move what both need into a side:shared lib',
      '[principal-never-imports-agent] libs/principal/proxy/src/index.ts: "@ws/agent-core": side:principal code imports side:agent libs/agent/agent-core; move what both need into a side:shared lib',
    ]);
  });

  it('refuses shared code importing either side (dynamic imports too)', () => {
    const root = workspace({
      'libs/principal/principal-core': principalLib,
      'libs/shared/names': {
        side: 'shared',
        deps: { '@ws/principal-core': '*' },
        refs: ['libs/principal/principal-core'],
        files: { 'src/index.ts': "export const load = () => import('@ws/principal-core');\n" },
      },
    });
    expect(check(root).map((v) => [v.rule, v.file, v.import])).toEqual([
      [RULES.sharedImportsSide, 'libs/shared/names/src/index.ts', '@ws/principal-core'],
    ]);
  });

  it('lets only tests and side:testing projects import side:testing projects', () => {
    const root = workspace({
      'libs/testing/fake': testingLib,
      'libs/testing/fleet': {
        side: 'testing',
        deps: { '@ws/fake': '*' },
        refs: ['libs/testing/fake'],
        files: { 'src/index.ts': "import '@ws/fake';\n" },
      },
      'libs/principal/gateway': {
        side: 'principal',
        deps: { '@ws/fake': '*' },
        devDeps: {},
        refs: ['libs/testing/fake'],
        files: {
          'src/index.ts': "import { fake } from '@ws/fake';\n",
          'src/a.test.ts': "import '@ws/fake';\n",
        },
      },
    });
    expect(check(root).map(format)).toEqual([
      '[testing-only-in-tests] libs/principal/gateway/src/index.ts: "@ws/fake": libs/testing/fake is side:testing: only tests and side:testing projects may import it',
    ]);
  });

  it('refuses relative imports that leave the project', () => {
    const root = workspace({
      'libs/shared/a': { side: 'shared' },
      'libs/shared/b': {
        side: 'shared',
        files: { 'src/index.ts': "import { x } from '../../a/src/index.js';\n" },
      },
    });
    expect(check(root).map(format)).toEqual([
      '[imports-through-package-names] libs/shared/b/src/index.ts: "../../a/src/index.js": reaches outside libs/shared/b; import the other project by its package name',
    ]);
  });

  it('wants every imported package declared, and no declared package unused', () => {
    const root = workspace({
      'libs/shared/a': {
        side: 'shared',
        deps: { yaml: '^2' },
        files: {
          'src/index.ts': "import { Redis } from 'ioredis';\nimport pino from 'pino/file';\n",
          'test/a.test.ts': "import { request } from 'undici';\n",
        },
      },
    });
    expect(check(root).map(format)).toEqual([
      '[declared-dependencies] libs/shared/a/package.json: "ioredis": libs/shared/a/src imports ioredis, which "dependencies" does not declare',
      '[declared-dependencies] libs/shared/a/package.json: "pino": libs/shared/a/src imports pino, which "dependencies" does not declare',
      '[declared-dependencies] libs/shared/a/package.json: "undici": libs/shared/a tests import undici, which neither "dependencies" nor "devDependencies" declares',
      '[no-unused-dependencies] libs/shared/a/package.json: "yaml": "dependencies" declares yaml, which nothing in libs/shared/a/src imports',
    ]);
  });

  it('wants tsconfig references to match what the sources import, and every project in the build', () => {
    const root = workspace(
      {
        'libs/shared/a': { side: 'shared' },
        'libs/shared/b': { side: 'shared' },
        'libs/shared/c': {
          side: 'shared',
          deps: { '@ws/a': '*' },
          refs: ['libs/shared/b'],
          files: { 'src/index.ts': "import { x } from '@ws/a';\n" },
        },
      },
      ['libs/shared/a', 'libs/shared/c'],
    );
    expect(check(root).map(format)).toEqual([
      '[tsconfig-references] libs/shared/c/tsconfig.json: "libs/shared/a": src imports libs/shared/a but tsconfig.json has no reference to it (tsc -b would build in the wrong order)',
      '[tsconfig-references] libs/shared/c/tsconfig.json: "libs/shared/b": references libs/shared/b, which src does not import',
      '[build-references-every-project] tsconfig.build.json: "libs/shared/b": no reference to libs/shared/b, so `npm run build` skips it',
    ]);
  });

  it('refuses dependency cycles', () => {
    const root = workspace({
      'libs/shared/a': {
        side: 'shared',
        deps: { '@ws/b': '*' },
        refs: ['libs/shared/b'],
        files: { 'src/index.ts': "import '@ws/b';\n" },
      },
      'libs/shared/b': {
        side: 'shared',
        deps: { '@ws/a': '*' },
        refs: ['libs/shared/a'],
        files: { 'src/index.ts': "import '@ws/a';\n" },
      },
    });
    expect(check(root).map(format)).toEqual([
      '[no-cycles] libs/shared/b/package.json: "libs/shared/a": dependency cycle: libs/shared/a -> libs/shared/b -> libs/shared/a',
    ]);
  });

  it('wants one type tag matching the folder and one known side tag', () => {
    const root = workspace({ 'libs/client/a': { side: 'client', type: 'app' } });
    expect(check(root).map(format)).toEqual([
      '[project-tags] libs/client/a/package.json: needs exactly one type tag, "type:lib" (has ["type:app","side:client"])',
      '[project-tags] libs/client/a/package.json: needs exactly one side tag of side:principal, side:agent, side:shared, side:testing (has ["type:app","side:client"])',
    ]);
  });

  it('flags timed waits in tests unless the line says why with wait-ok, and leaves src alone', () => {
    const root = workspace({
      'libs/shared/a': {
        side: 'shared',
        files: {
          'src/index.ts': 'export const pause = () => new Promise((r) => setTimeout(r, 5));\n',
          'test/a.test.ts': [
            'await new Promise((r) => setTimeout(r, 100));',
            'await sleep(50);',
            'await delay(10);',
            'await new Promise((resolve) => setTimeout(resolve, 1)); // wait-ok: paces a retry loop',
            'await new Promise((r) => setTimeout(r, 1)); // wait-ok:',
            'const t = setTimeout(() => done(), 5);',
            'await asleep(1);',
          ].join('\n'),
          'test/helpers.ts': 'await delay(1);\n',
        },
      },
    });
    const found = check(root).filter((v) => v.rule === RULES.sleepInTest);
    expect(found.map((v) => v.file)).toEqual([
      'libs/shared/a/test/a.test.ts:1',
      'libs/shared/a/test/a.test.ts:2',
      'libs/shared/a/test/a.test.ts:3',
      'libs/shared/a/test/a.test.ts:5',
      'libs/shared/a/test/helpers.ts:1',
    ]);
    expect(format(found[0]!)).toMatch(
      /^\[no-sleep-in-tests\] libs\/shared\/a\/test\/a\.test\.ts:1: timed wait in a test/,
    );
  });

  it('exits non-zero from the command line, naming the rule, the file and the import', () => {
    const root = workspace({
      'libs/principal/principal-core': principalLib,
      'libs/agent/agent-core': {
        side: 'agent',
        deps: { '@ws/principal-core': '*' },
        refs: ['libs/principal/principal-core'],
        files: { 'src/index.ts': "import '@ws/principal-core';\n" },
      },
    });
    let failure: { status: number; stderr: string } | undefined;
    try {
      execFileSync(process.execPath, [SCRIPT, root], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      failure = err as { status: number; stderr: string };
    }
    expect(failure?.status).toBe(1);
    expect(failure?.stderr).toContain(
      '[agent-never-imports-principal] libs/agent/agent-core/src/index.ts: "@ws/principal-core": side:agent code imports side:principal libs/principal/principal-core',
    );
    expect(execFileSync(process.execPath, [SCRIPT, REPO], { encoding: 'utf8' })).toContain(
      'workspace rules:',
    );
  });
});
