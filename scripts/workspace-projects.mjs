// Where the workspace's projects are: apps/<name>, and libs/<side>/<name> (the tree shows the
// trust split; the side is also each lib's `side:` tag). One list for every script that walks
// the projects, so moving a project never needs a second edit.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Project folders as `{ group, name, dir }`, `dir` relative to `root`, sorted by name within a group. */
export function projectDirs(root, groups = ['apps', 'libs']) {
  const out = [];
  const isDir = (p) => existsSync(p) && statSync(p).isDirectory();
  for (const group of groups) {
    const base = path.join(root, group);
    if (!isDir(base)) continue;
    const found = [];
    for (const entry of readdirSync(base)) {
      const p = path.join(base, entry);
      if (!isDir(p)) continue;
      if (group === 'apps') {
        if (existsSync(path.join(p, 'package.json'))) found.push({ name: entry, dir: `apps/${entry}` });
        continue;
      }
      for (const name of readdirSync(p))
        if (existsSync(path.join(p, name, 'package.json')))
          found.push({ name, dir: `libs/${entry}/${name}` });
    }
    found.sort((a, b) => a.name.localeCompare(b.name));
    for (const f of found) out.push({ group, ...f });
  }
  return out;
}
