// deploy/README.md's "Onboard a workload cluster with one manifest": its commands run as an
// operator runs them (bash, the built `pullplane` CLI, kubectl against the Kubernetes API
// stand-in, from a directory holding ./pki and deploy/), and what they apply is there.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  builtAppMain,
  type FakeKubeApiServer,
  findBinary,
  makeTempDir,
  startFakeKubeApiServer,
} from '@pullplane/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { guideScripts } from './support/install-guide.js';

const run = promisify(execFile);
const DEPLOY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REF = { file: 'README.md', heading: 'Onboard a workload cluster with one manifest (ClusterAgent)' };

let work: string;
let kube: FakeKubeApiServer;
let env: NodeJS.ProcessEnv;
const outputs: string[] = [];

beforeAll(async () => {
  work = makeTempDir('pullplane-onboarding-');
  const bin = path.join(work, 'bin');
  mkdirSync(bin);
  writeFileSync(
    path.join(bin, 'pullplane'),
    `#!/bin/sh\nexec "${process.execPath}" "${builtAppMain('cli')}" "$@"\n`,
  );
  chmodSync(path.join(bin, 'pullplane'), 0o755);
  symlinkSync(DEPLOY, path.join(work, 'deploy'));
  kube = await startFakeKubeApiServer();
  const kubeconfig = await kube.writeKubeconfig(path.join(work, 'kubeconfig'));
  env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, KUBECONFIG: kubeconfig, HOME: work };
  const kubectl = findBinary('kubectl', 'install kubectl');
  await run(kubectl, ['create', 'namespace', 'argocd'], { env });
  // The workstation's CA, from the principal's install.
  await run('pullplane', ['ca', 'init', '--dir', './pki'], { cwd: work, env });
  for (const script of guideScripts(REF)) {
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: work,
      env,
      timeout: 60_000,
    });
    outputs.push(stdout);
  }
}, 120_000);
afterAll(async () => {
  await kube?.close();
});

it('has commands, and they create every object the manifest holds', async () => {
  expect(guideScripts(REF).length).toBeGreaterThan(0);
  const manifest = parseAllDocuments(readFileSync(path.join(work, 'east.yaml'), 'utf8')).map(
    (d) => d.toJSON() as { kind: string; metadata: { name: string; namespace?: string } },
  );
  expect(manifest.map((o) => o.kind)).toEqual(
    expect.arrayContaining([
      'ServiceAccount',
      'Role',
      'ClusterRole',
      'NetworkPolicy',
      'Secret',
      'ClusterAgent',
      'Deployment',
    ]),
  );
  const kubectl = findBinary('kubectl', 'install kubectl');
  for (const o of manifest) {
    const args = [
      'get',
      o.kind,
      o.metadata.name,
      '-o',
      'name',
      ...(o.metadata.namespace ? ['-n', o.metadata.namespace] : []),
    ];
    const { stdout } = await run(kubectl, args, { env });
    expect(stdout.trim()).toMatch(new RegExp(`/${o.metadata.name}$`));
  }
  // The last command shows the ClusterAgent to the operator.
  expect(outputs.join('')).toMatch(/\neast\s+argocd-agent-principal\.example\.com\s+east\s+/);
});
