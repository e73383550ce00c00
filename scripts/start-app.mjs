// Starts one app: `node scripts/start-app.mjs <app> [flags…]`. In a source checkout it first
// brings the TypeScript build up to date (incremental, ~1 s when nothing changed); in an image
// without the compiler it runs the prebuilt dist/ as is.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [app, ...flags] = process.argv.slice(2);
const main = path.join(root, 'apps', app ?? '', 'dist', 'main.js');
if (!app || !existsSync(path.join(root, 'apps', app))) {
  console.error(`usage: start-app.mjs <app> [flags]; unknown app ${JSON.stringify(app)}`);
  process.exit(2);
}
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
if (existsSync(tsc) && existsSync(path.join(root, 'tsconfig.build.json'))) {
  execFileSync(process.execPath, [tsc, '-b', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
}
process.argv = [process.argv[0], main, ...flags];
await import(pathToFileURL(main).href);
