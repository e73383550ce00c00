// No Docker engine runs here, so the images are checked by reading their Dockerfiles: pinned base
// images, a non-root numeric user in group 0 (OpenShift's arbitrary UIDs), the same start script as `npm run start:<app>` in exec form,
// no HEALTHCHECK (Kubernetes probes), production dependencies only, and exactly the compiled
// workspaces the app imports.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { projectDirs } from '../../scripts/workspace-projects.mjs';
import { DEPLOY_DIR, REPO_ROOT } from './support/render.js';

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Dockerfile → stages of instructions (continuations joined, comments dropped). */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw) && current === '') continue;
    if (/\\\s*$/.test(raw)) {
      current += `${raw.replace(/\\\s*$/, '')} `;
      continue;
    }
    current += raw;
    if (current.trim() !== '') logical.push(current.trim());
    current = '';
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`cannot parse: ${line}`);
    const op = m[1]!.toUpperCase();
    const args = m[2]!;
    if (op === 'FROM') {
      const f = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: f![1]!, name: f![2], instructions: [] });
    } else if (stages.length === 0) {
      if (op !== 'ARG') throw new Error(`${op} before FROM`);
    } else stages.at(-1)!.instructions.push({ op, args });
  }
  return stages;
}

const rootPkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  engines: { node: string };
};

/** Workspace package name → directory (apps/x, libs/<side>/y). */
const workspaces = new Map<string, { dir: string; deps: string[] }>();
for (const { dir } of (projectDirs as (root: string) => Array<{ dir: string }>)(REPO_ROOT)) {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, dir, 'package.json'), 'utf8')) as {
    name: string;
    dependencies?: Record<string, string>;
  };
  workspaces.set(pkg.name, { dir, deps: Object.keys(pkg.dependencies ?? {}) });
}

/** The workspace directories an app imports, transitively (its own excluded). */
function workspaceDeps(appDir: string): string[] {
  const self = [...workspaces.values()].find((w) => w.dir === appDir);
  if (!self) throw new Error(`${appDir} has no package.json`);
  const seen = new Set<string>();
  const walk = (deps: string[]) => {
    for (const d of deps) {
      const w = workspaces.get(d);
      if (!w || seen.has(w.dir)) continue;
      seen.add(w.dir);
      walk(w.deps);
    }
  };
  walk(self.deps);
  return [...seen].sort();
}

/** The apps with images; `script` is the root npm script that starts them. */
const APPS = [
  { app: 'stream-gateway', script: 'start:stream-gateway' },
  { app: 'resource-proxy', script: 'start:resource-proxy' },
  { app: 'redis-proxy', script: 'start:redis-proxy' },
  { app: 'extension-proxy', script: 'start:extension-proxy' },
  { app: 'agent', script: 'start:agent' },
  { app: 'cli', script: 'cli' },
];

const PINNED_NODE = /^node:(\d+)\.(\d+)\.(\d+)-bookworm-slim(@sha256:[0-9a-f]{64})?$/;

describe.each(APPS)('apps/$app/Dockerfile', ({ app, script }) => {
  const file = path.join(REPO_ROOT, 'apps', app, 'Dockerfile');
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const stages = text ? parseDockerfile(text) : [];
  const final = stages.at(-1);
  const stageNames = new Set(stages.map((s) => s.name).filter(Boolean));
  // The redis proxy is being written in parallel: checks that need its package.json wait for it.
  const inTree = existsSync(path.join(REPO_ROOT, 'apps', app, 'package.json'));

  it('exists and is multi-stage', () => {
    expect(text).not.toBe('');
    expect(stages.length).toBeGreaterThanOrEqual(2);
  });

  it('pins every base image by exact version, never latest, on the Node major the repo supports', () => {
    const minMajor = Number(/(\d+)/.exec(rootPkg.engines.node)![1]);
    for (const s of stages) {
      if (stageNames.has(s.from)) continue;
      const m = PINNED_NODE.exec(s.from);
      expect(m, `${s.from} is not node:<x.y.z>-bookworm-slim`).not.toBeNull();
      expect(Number(m![1])).toBe(minMajor);
      expect(s.from).not.toMatch(/latest/);
    }
    // One base for all stages: a build for one Node runs on the same Node.
    expect(new Set(stages.filter((s) => !stageNames.has(s.from)).map((s) => s.from)).size).toBe(1);
  });

  it('runs as a non-root numeric user in group 0, writing only where group 0 may (any UID, as OpenShift runs it)', () => {
    const users = final!.instructions.filter((i) => i.op === 'USER');
    expect(users.length).toBe(1);
    const m = /^(\d+):(\d+)$/.exec(users[0]!.args.trim());
    expect(m, `USER ${users[0]!.args} is not numeric uid:gid`).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(0);
    // OpenShift's arbitrary UIDs are in group 0; a UID of its own range has no other group.
    expect(Number(m![2])).toBe(0);
    // $HOME is where Node and libraries write by default: the world-writable /tmp (an emptyDir
    // in the bundles), not a home directory only UID 1000 owns.
    const env = final!.instructions.filter((i) => i.op === 'ENV').map((i) => i.args);
    expect(env).toContain('HOME=/tmp');
    // USER comes after every RUN of the final stage, so nothing after it runs as root.
    const ops = final!.instructions.map((i) => i.op);
    expect(ops.lastIndexOf('RUN')).toBeLessThan(ops.indexOf('USER'));
  });

  it('starts with the same script as the root npm script, in exec form, without CMD or HEALTHCHECK', () => {
    const entrypoints = final!.instructions.filter((i) => i.op === 'ENTRYPOINT');
    expect(entrypoints.length).toBe(1);
    const argv = JSON.parse(entrypoints[0]!.args) as string[];
    // node, any Node.js options (the gateway's young-generation cap), the start script, the app.
    expect(argv[0]).toBe('node');
    expect(argv.slice(-2)).toEqual(['scripts/start-app.mjs', app]);
    for (const option of argv.slice(1, -2)) expect(option).toMatch(/^--[a-z-]+(=\S+)?$/);
    expect(
      stages.flatMap((s) => s.instructions).filter((i) => i.op === 'HEALTHCHECK' || i.op === 'CMD'),
    ).toEqual([]);
    expect(final!.instructions.some((i) => i.op === 'COPY' && i.args.includes('scripts/start-app.mjs'))).toBe(
      true,
    );
    expect(final!.instructions.find((i) => i.op === 'WORKDIR')?.args).toBe('/app');
  });

  // V8's memory reducer, once it has run on an idle process, keeps the heap growing slowly for as
  // long as the process stays busy: the next burst of large bodies then runs a mark-compact every
  // few dozen milliseconds and costs twice as much per request (docs/benchmarks.md). Every app
  // that serves traffic starts with it off; the CLI exits long before it could run.
  it.skipIf(app === 'cli')('starts with the memory reducer off (it serves traffic)', () => {
    const entrypoint = final!.instructions.find((i) => i.op === 'ENTRYPOINT');
    expect(JSON.parse(entrypoint!.args) as string[]).toContain('--no-memory-reducer');
  });

  it.skipIf(!inTree)('matches the root package.json script', () => {
    expect(rootPkg.scripts[script]).toBe(argv0(text));
  });

  it('builds with npm ci and npm run build, and installs production dependencies only at runtime', () => {
    const runs = (s: Stage) => s.instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    const build = stages.find((s) => runs(s).some((r) => r.includes('npm run build')));
    expect(build, 'a stage runs npm run build').toBeDefined();
    expect(runs(build!).some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    const finalRuns = runs(final!);
    const installs = finalRuns.filter((r) => /\bnpm (ci|install|i)\b/.test(r));
    expect(installs.length).toBe(1);
    expect(installs[0]).toMatch(/\bnpm ci\b.*--omit=dev/);
    expect(finalRuns.some((r) => /npm run build|tsc\b/.test(r))).toBe(false);
    // Nothing of the sources: the final stage copies manifests and compiled dist/ folders only.
    for (const c of final!.instructions.filter((i) => i.op === 'COPY')) {
      const parts = c.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const sources = parts.slice(0, -1);
      for (const src of sources) {
        if (c.args.includes('--from='))
          expect(src).toMatch(/^(\/src\/(apps\/[a-z0-9-]+|libs\/[a-z]+\/[a-z0-9-]+)\/dist|\/out\/)$/);
        else expect(src).toMatch(/^(package\.json|package-lock\.json|scripts\/start-app\.mjs)$/);
      }
    }
  });

  it.skipIf(!inTree)('copies exactly the dist/ folders of the app and the workspaces it imports', () => {
    const copied = final!.instructions
      .filter((i) => i.op === 'COPY' && i.args.includes('--from='))
      .map((i) => /\/src\/(apps\/[a-z0-9-]+|libs\/[a-z]+\/[a-z0-9-]+)\/dist/.exec(i.args)?.[1])
      .filter((d): d is string => d !== undefined)
      .sort();
    expect(copied).toEqual([...workspaceDeps(`apps/${app}`), `apps/${app}`].sort());
  });

  it('shares its dependency and build stages with every other image (one cached build for all)', () => {
    const shared = (t: string) =>
      parseDockerfile(t)
        .slice(0, -1)
        .map((s) => JSON.stringify(s));
    const gateway = readFileSync(path.join(REPO_ROOT, 'apps/stream-gateway/Dockerfile'), 'utf8');
    expect(shared(text)).toEqual(shared(gateway));
  });
});

function argv0(text: string): string {
  const stages = parseDockerfile(text);
  const e = stages.at(-1)!.instructions.find((i) => i.op === 'ENTRYPOINT')!;
  return (JSON.parse(e.args) as string[]).join(' ');
}

describe('image build context', () => {
  it('has every Dockerfile generated from the project graph, up to date (npm run dockerfiles)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/dockerfiles.mjs', '--check'], {
      cwd: REPO_ROOT,
    });
    expect(stdout).toContain('Dockerfiles: up to date');
    // Every app with an image is among those checked above, stage by stage.
    const generated = readdirSync(path.join(REPO_ROOT, 'apps')).filter((app) => {
      const file = path.join(REPO_ROOT, 'apps', app, 'Dockerfile');
      return existsSync(file) && readFileSync(file, 'utf8').includes('Generated by `npm run dockerfiles`');
    });
    expect(generated.sort()).toEqual(APPS.map((a) => a.app).sort());
  });

  it('has a .dockerignore that keeps dependencies, build output and VCS data out', () => {
    const lines = readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['**/node_modules', '**/dist', '.git']) expect(lines).toContain(entry);
    // The Dockerfiles copy these; ignoring them would break the build.
    for (const needed of [
      'apps',
      'libs',
      'scripts',
      'package.json',
      'package-lock.json',
      'tsconfig.base.json',
    ]) {
      expect(lines).not.toContain(needed);
    }
  });

  it('has a Dockerfile for every pullplane image the manifests deploy', () => {
    const images = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, e.name);
        if (e.isDirectory()) walk(full);
        else if (e.name.endsWith('.yaml')) {
          for (const m of readFileSync(full, 'utf8').matchAll(/ghcr\.io\/pullplane\/([a-z0-9-]+):/g))
            images.add(m[1]!);
        }
      }
    };
    walk(DEPLOY_DIR);
    expect(images.size).toBeGreaterThan(0);
    for (const app of images)
      expect(existsSync(path.join(REPO_ROOT, 'apps', app, 'Dockerfile')), app).toBe(true);
  });
});
