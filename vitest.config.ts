import { defineConfig } from 'vitest/config';

// Workspace packages export their TypeScript sources under the "source" condition,
// so tests run against src/ without a build step.
export default defineConfig({
  resolve: { conditions: ['source', 'module', 'node', 'import', 'default'] },
  ssr: { resolve: { conditions: ['source', 'module', 'node', 'import', 'default'] } },
  test: {
    include: [
      'apps/*/{src,test}/**/*.test.ts',
      'libs/*/*/{src,test}/**/*.test.ts',
      'deploy/test/**/*.test.ts',
      'scripts/test/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', '**/dist/**'],
    // Every test must assert something: see the file.
    setupFiles: ['scripts/vitest-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
