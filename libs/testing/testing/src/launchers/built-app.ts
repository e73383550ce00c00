import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../..');

/** Newest modification time of the .ts files under `dir` (0 when there are none). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

let staleChecked: string[] | undefined;

/** Workspaces whose src/ changed after their last build (tsc -b touches dist/.tsbuildinfo on every build). */
function staleBuilds(): string[] {
  staleChecked ??= ['apps', 'libs'].flatMap((group) =>
    readdirSync(path.join(root, group)).flatMap((name) => {
      const src = path.join(root, group, name, 'src');
      if (!existsSync(src)) return [];
      const info = path.join(root, group, name, 'dist', '.tsbuildinfo');
      const built = existsSync(info) ? statSync(info).mtimeMs : 0;
      return newestSource(src) > built ? [`${group}/${name}`] : [];
    }),
  );
  return staleChecked;
}

/**
 * The path of a built app's entry point (`apps/<app>/dist/main.js`), for tests that run it as
 * a process. Run directly (`npx vitest run …`), it fails, naming them, when any workspace has
 * sources newer than its build: such a test would otherwise run yesterday's code and pass or
 * fail for it. Under Nx the test target depends on the builds, which may be restored from its
 * cache without touching files, so the timestamps prove nothing there and are not checked.
 */
export function builtAppMain(app: string): string {
  const main = path.join(root, 'apps', app, 'dist', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  if (process.env.NX_TASK_TARGET_TARGET !== undefined) return main;
  const stale = staleBuilds();
  if (stale.length > 0)
    throw new Error(
      `sources changed since the last build of ${stale.join(', ')}: run \`npm run build\` first`,
    );
  return main;
}
