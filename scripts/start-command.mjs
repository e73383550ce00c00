// How each app is started: the root npm script `node [--option=value…] scripts/start-app.mjs <app>`.
// The images run the same command, and the benchmarks start the apps with the same Node.js
// options, so an option set there (the stream gateway's young-generation size) is measured.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const scripts = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts;

/** The root npm script that starts `app`, and the Node.js options its command gives. */
export function startScriptOf(app) {
  const pattern = new RegExp(`^node((?: --[a-z-]+(?:=\\S+)?)*) scripts/start-app\\.mjs ${app}$`);
  for (const [script, command] of Object.entries(scripts)) {
    const m = pattern.exec(command);
    if (m) return { script, nodeOptions: m[1].split(' ').filter(Boolean) };
  }
  return undefined;
}
