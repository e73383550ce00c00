// Infers every app's and lib's Nx targets from its folder, so a new project needs only a
// package.json with `nx.tags`: build, typecheck (sources and tests), lint, test (when it has
// tests), docs-check (apps: the README flag table) and proto-check (libs/shared/proto).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const hasTests = (dir) => {
  if (!existsSync(dir)) return false;
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory() ? hasTests(p) : entry.endsWith('.test.ts')) return true;
  }
  return false;
};

const SHARED = ['{workspaceRoot}/tsconfig.base.json', { externalDependencies: ['typescript'] }];

function targetsFor(root, workspaceRoot) {
  const kind = root.split('/')[0];
  const name = root.split('/').at(-1);
  const abs = path.join(workspaceRoot, root);
  const targets = {
    build: {
      command: `tsc -b ${root}/tsconfig.json`,
      dependsOn: ['^build'],
      inputs: ['production', '^production', ...SHARED],
      outputs: ['{projectRoot}/dist'],
      cache: true,
    },
    // Tests included: expectTypeOf assertions and test helpers are type-checked too. Other
    // workspaces are read through their built declarations, hence ^build.
    typecheck: {
      command: `tsc -p ${root}/tsconfig.test.json`,
      dependsOn: ['^build'],
      inputs: ['default', '^production', ...SHARED],
      outputs: [],
      cache: true,
    },
    lint: {
      command: `biome check ${root}`,
      inputs: ['default', '{workspaceRoot}/biome.json', { externalDependencies: ['@biomejs/biome'] }],
      outputs: [],
      cache: true,
    },
  };
  if (hasTests(path.join(abs, 'test')) || hasTests(path.join(abs, 'src'))) {
    targets.test = {
      // One worker per project: Nx runs projects side by side, and the integration tests spawn
      // real servers. The apps' own build comes first: some tests start the built app.
      command: `vitest run --config vitest.config.ts --maxWorkers=1 ${root}/`,
      dependsOn: ['build'],
      inputs: [
        'default',
        '^production',
        '{workspaceRoot}/vitest.config.ts',
        '{workspaceRoot}/scripts/vitest-setup.ts',
        { externalDependencies: ['vitest'] },
      ],
      outputs: [],
      cache: true,
    };
  }
  if (
    kind === 'apps' &&
    existsSync(path.join(abs, 'README.md')) &&
    existsSync(path.join(abs, 'src/options.ts'))
  ) {
    targets['docs-check'] = {
      command: `node scripts/flag-docs.mjs --check --app=${name}`,
      dependsOn: ['build', '^build'],
      inputs: [
        '{projectRoot}/README.md',
        'production',
        '^production',
        '{workspaceRoot}/scripts/flag-docs.mjs',
        '{workspaceRoot}/libs/shared/config/src/gen/app-names.ts',
      ],
      outputs: [],
      cache: true,
    };
  }
  if (root === 'libs/shared/proto') {
    targets['proto-check'] = {
      command: 'node scripts/check-generated.mjs',
      inputs: [
        '{workspaceRoot}/proto/**/*',
        '{projectRoot}/src/gen/**/*',
        '{workspaceRoot}/scripts/check-generated.mjs',
        { externalDependencies: ['@bufbuild/buf', '@bufbuild/protoc-gen-es'] },
      ],
      outputs: [],
      cache: true,
    };
  }
  return targets;
}

/** @type {import('nx/src/project-graph/plugins').CreateNodesV2} */
export const createNodesV2 = [
  '{apps/*,libs/*/*}/package.json',
  (files, _options, context) =>
    files.map((file) => {
      const root = path.dirname(file);
      const pkg = JSON.parse(readFileSync(path.join(context.workspaceRoot, file), 'utf8'));
      return [
        file,
        {
          projects: {
            [root]: {
              root,
              name: pkg.name,
              projectType: root.startsWith('apps/') ? 'application' : 'library',
              tags: pkg.nx?.tags ?? [],
              targets: targetsFor(root, context.workspaceRoot),
            },
          },
        },
      ];
    }),
];

export const name = 'pullplane-targets';
