import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '@pullplane/config';
import { freePort, httpGet, runKubectl, spawnKubectl } from '@pullplane/testing';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AllInOneApp, createAllInOneApp } from '../src/app.js';
import { allInOneOptions } from '../src/options.js';

const run = promisify(execFile);
const REPO = path.resolve(import.meta.dirname, '../../..');
let app: AllInOneApp;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'all-in-one-'));
  const { config } = loadConfig(allInOneOptions, {
    argv: [
      '--gateway-port=0',
      '--resource-proxy-port=0',
      '--extension-proxy-port=0',
      '--ops-port=0',
      '--agents=2',
      `--state-dir=${dir}`,
    ],
    env: {},
  });
  app = await createAllInOneApp(config, { logger: pino({ level: 'silent' }), registry: new Registry() });
  await app.start();
}, 60_000);

afterAll(async () => {
  await app?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const kubectl = (...args: string[]) =>
  run('kubectl', ['--kubeconfig', app.files.kubeconfig, '--request-timeout=10s', ...args]);

it("serves each demo agent's simulated cluster to kubectl through the tunnel", async () => {
  const { stdout } = await kubectl('get', 'deployments', '-A', '-o', 'name');
  expect(stdout.split('\n').filter(Boolean).sort()).toEqual([
    'deployment.apps/guestbook',
    'deployment.apps/podinfo',
  ]);
  const other = await kubectl('--context', 'demo-2', 'get', '--raw', '/version');
  expect(JSON.parse(other.stdout)).toHaveProperty('gitVersion');
  expect(
    app.gateway
      .sessions()
      .map((s) => s.agent)
      .sort(),
  ).toEqual(['demo-1', 'demo-2']);
  expect(app.nextSteps()).toContain(`kubectl --kubeconfig ${app.files.kubeconfig}`);
});

it("answers the printed curl, shaped like Argo CD's extension call, from inside each demo cluster", async () => {
  expect(app.nextSteps()).toContain('Argocd-Target-Cluster-Name: demo-1');
  for (const agent of ['demo-1', 'demo-2']) {
    const [cmd, ...args] = app.extensionCurl(agent);
    const { stdout } = await run(cmd!, ['--silent', '--show-error', '--fail', ...args]);
    const answer = JSON.parse(stdout) as { cluster: string; path: string; argocd: Record<string, string> };
    expect(answer.cluster).toBe(agent);
    expect(answer.path).toBe('/api/info');
    expect(answer.argocd).toMatchObject({ application: 'argocd:guestbook', user: 'admin', groups: 'admins' });
  }
  // Without the Argo CD server's certificate, nothing comes back.
  const [cmd, ...args] = app.extensionCurl('demo-1');
  const noCert = args.filter(
    (a, i) => !['--cert', '--key'].includes(a) && !['--cert', '--key'].includes(args[i - 1]!),
  );
  const refused = await run(cmd!, [
    '--silent',
    '--write-out',
    '%{http_code}',
    '--output',
    '/dev/null',
    ...noCert,
  ]);
  expect(refused.stdout).toBe('401');
});

it("is one process of the services' own functions: one ops port with every service's checks, no internal listener", async () => {
  // The proxies reach the gateway in-process: nothing listens for other replicas.
  expect(app.gateway.internalAddress).toBe('');
  expect(app.nextSteps()).toContain(`http://127.0.0.1:${app.opsPort}/readyz`);
  const res = await fetch(`http://127.0.0.1:${app.opsPort}/readyz`);
  expect(res.status).toBe(200);
  const { checks } = (await res.json()) as { checks: Record<string, { ok: boolean }> };
  expect(Object.keys(checks).sort()).toEqual([
    'extension-proxy/bus',
    'extension-proxy/listener',
    'resource-proxy/bus',
    'resource-proxy/listener',
    'stream-gateway/bus',
    'stream-gateway/gateway',
  ]);
  const metrics = await (await fetch(`http://127.0.0.1:${app.opsPort}/metrics`)).text();
  // Each proxy's router sees both demo agents through presence on the shared bus.
  expect(metrics).toMatch(/proxy_known_agents\{proxy="resource-proxy"\} 2$/m);
  expect(metrics).toMatch(/proxy_known_agents\{proxy="extension-proxy"\} 2$/m);
});

it("runs the README's exec, cp, attach and port-forward lines on a demo pod, as npm start prints them", async () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const lines = readme
    .split('\n')
    .filter((l) => /^kubectl --kubeconfig \.pullplane\/kubeconfig .* (exec|cp|attach|port-forward) /.test(l));
  expect(lines.map((l) => / (exec|cp|attach|port-forward) /.exec(l)![1])).toEqual([
    'exec',
    'cp',
    'attach',
    'port-forward',
  ]);
  const pod = app
    .fleet!.agents[0]!.cluster!.store.list({ apiVersion: 'v1', kind: 'Pod', namespace: 'demo' })
    .map((p) => p.metadata.name!)
    .find((n) => n.startsWith('guestbook-'))!;
  const local = await freePort();
  // The README's lines with this run's kubeconfig, pod, a free local port and the README's path.
  const argv = (line: string) =>
    line
      .replace(/<pod>/g, pod)
      .replace('18080:8080', `${local}:8080`)
      .replace(' README.md ', ` ${path.join(REPO, 'README.md')} `)
      .split(' ')
      .slice(3)
      .filter(Boolean);
  const opts = { kubeconfig: app.files.kubeconfig, timeoutMs: 60_000 };
  // npm start prints the same lines, with its kubeconfig and a pod of its own.
  for (const line of lines)
    expect(app.nextSteps()).toContain(
      line.replace('.pullplane/kubeconfig', app.files.kubeconfig).replace(/<pod>/g, pod),
    );
  const [exec, cp, attach, forward] = lines.map(argv) as [string[], string[], string[], string[]];
  expect(await runKubectl(exec, opts)).toMatchObject({ code: 0, stdout: 'hello\n' });
  const copied = await runKubectl(cp, opts);
  expect(copied).toMatchObject({ code: 0, stderr: '' });
  const back = await runKubectl(
    ['--context', 'demo-1', '-n', 'demo', 'exec', pod, '--', 'cat', '/tmp/README.md'],
    opts,
  );
  expect(back.stdout).toBe(readme);
  const attached = spawnKubectl(attach, { ...opts, input: 'hello attach\n' });
  try {
    await attached.waitFor('hello attach\n', 30_000);
  } finally {
    await attached.stop();
  }
  const pf = spawnKubectl(forward, opts);
  try {
    await pf.waitFor(`127.0.0.1:${local} -> 8080`, 30_000);
    const answer = await httpGet(local, '/');
    expect(answer.body.toString()).toBe(`Hello from ${pod} in demo (port 8080)\n`);
  } finally {
    await pf.stop();
  }
}, 120_000);
