// NATS in the principal bundles is locked: the bundled server admits only the roles' nkeys with
// the shipped permissions (the files libs/principal/bus/test/nats-permissions.test.ts runs against a real
// nats-server), takes the public keys from one Secret, and every principal service connects with
// its own role's seed, never with --nats-insecure. The external-NATS example keeps the identities.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createNatsUserNkey } from '@pullplane/bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ContainerConfig, containerConfig, IMAGE, removeScratch } from './support/apps.js';
import { DEPLOY_DIR, find, get, type K8sObject, render, workloads } from './support/render.js';

const run = promisify(execFile);
const NATS_DIR = path.join(DEPLOY_DIR, 'base/principal/nats');

/** Every rendered principal bundle; `external`: its NATS is the operator's. */
const PRINCIPAL_OVERLAYS: Record<string, { external: boolean }> = {
  'base/principal': { external: false },
  'istio/principal': { external: false },
  'linkerd/principal': { external: false },
  'examples/principal-external-nats': { external: true },
  'examples/principal-servicemonitor': { external: false },
  'examples/principal-monitoring': { external: false },
  'test/fixtures/migrated/principal': { external: false },
};
/** Each principal Deployment's NATS role, and the Secret holding that role's seed. */
const ROLE_OF = {
  'argocd-agent-principal': 'gateway',
  'argocd-agent-resource-proxy': 'proxy',
  'argocd-agent-redis-proxy': 'proxy',
  'argocd-agent-extension-proxy': 'proxy',
} as const;
const SEED_SECRET = { gateway: 'argocd-agent-nats-gateway', proxy: 'argocd-agent-nats-proxy' } as const;
const ROLES = ['gateway', 'proxy', 'admin'] as const;

afterAll(removeScratch);

describe.each(Object.entries(PRINCIPAL_OVERLAYS))('%s', (dir, overlay) => {
  let objects: K8sObject[] = [];
  const configs = new Map<
    string,
    { workload: K8sObject; container: K8sObject['spec']; c: ContainerConfig }
  >();
  beforeAll(async () => {
    objects = await render(dir);
    for (const w of workloads(objects))
      for (const container of w.spec.template.spec.containers ?? [])
        if (IMAGE.test(container.image))
          configs.set(w.metadata.name, {
            workload: w,
            container,
            c: await containerConfig(objects, w, container),
          });
  }, 30_000);

  it("connects every principal service with its own role's nkey seed, never --nats-insecure", () => {
    const seen: string[] = [];
    for (const [name, role] of Object.entries(ROLE_OF)) {
      const entry = configs.get(name);
      if (!entry) continue;
      seen.push(name);
      const { workload, container, c } = entry;
      expect(c.problems, name).toEqual([]);
      expect(c.config.natsInsecure, name).toBe(false);
      const seed = String(c.config.natsNkeySeedPath);
      // The mount that provides the seed file, and the Secret behind it.
      const mount = (container.volumeMounts ?? [])
        .filter((vm: { mountPath: string }) => seed.includes(`${vm.mountPath}/`))
        .sort(
          (a: { mountPath: string }, b: { mountPath: string }) => b.mountPath.length - a.mountPath.length,
        )[0];
      expect(mount, `${name}: no volume provides ${seed}`).toBeDefined();
      const volume = workload.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
      expect(volume?.secret?.secretName, name).toBe(SEED_SECRET[role]);
      const item = (volume.secret.items ?? []).find((i: { key: string }) => i.key === 'nkey.seed');
      expect(seed.endsWith(`${mount.mountPath}/${item?.path}`), name).toBe(true);
    }
    expect(seen.sort()).toEqual(Object.keys(ROLE_OF).sort());
  });

  if (overlay.external) {
    it('leaves the NATS users to the operator: no bundled NATS config or key Secret reference', () => {
      expect(find(objects, 'ConfigMap', 'argocd-agent-nats-config')).toBeUndefined();
      expect(find(objects, 'StatefulSet', 'argocd-agent-nats')).toBeUndefined();
    });
    return;
  }

  it('ships the tested users and permissions, with the public keys from argocd-agent-nats-users', () => {
    const cm = get(objects, 'ConfigMap', 'argocd-agent-nats-config');
    for (const file of ['auth.conf', 'permissions.conf'])
      expect(cm.data[file], file).toBe(readFileSync(path.join(NATS_DIR, file), 'utf8'));
    expect(cm.data['nats.conf']).toMatch(/^include \.\/auth\.conf$/m);
    const sts = get(objects, 'StatefulSet', 'argocd-agent-nats');
    const nats = sts.spec.template.spec.containers[0];
    expect(nats.command).toEqual(['nats-server', '--config', '/etc/nats-config/nats.conf']);
    const configMount = nats.volumeMounts.find(
      (m: { mountPath: string }) => m.mountPath === '/etc/nats-config',
    );
    expect(
      sts.spec.template.spec.volumes.find((v: { name: string }) => v.name === configMount.name),
    ).toMatchObject({
      configMap: { name: 'argocd-agent-nats-config' },
    });
    // Every key auth.conf names comes from the one Secret, under the role's name.
    const referenced = [...cm.data['auth.conf'].matchAll(/nkey: \$(PULLPLANE_NATS_([A-Z]+)_NKEY)/g)];
    expect(referenced.map((m) => m[2]!.toLowerCase())).toEqual([...ROLES]);
    for (const [, env, role] of referenced) {
      const e = nats.env.find((x: { name: string }) => x.name === env);
      expect(e?.valueFrom?.secretKeyRef, env).toEqual({
        name: 'argocd-agent-nats-users',
        key: role!.toLowerCase(),
      });
    }
  });

  it('renders a NATS configuration that nats-server accepts, and only with every role key set', async () => {
    const cm = get(objects, 'ConfigMap', 'argocd-agent-nats-config');
    const tmp = mkdtempSync(path.join(tmpdir(), 'nats-conf-'));
    try {
      for (const [file, text] of Object.entries(cm.data as Record<string, string>))
        writeFileSync(path.join(tmp, file), text);
      const env = Object.fromEntries(
        ROLES.map((r) => [`PULLPLANE_NATS_${r.toUpperCase()}_NKEY`, createNatsUserNkey().publicKey]),
      );
      const check = (vars: Record<string, string>) =>
        run('nats-server', ['-t', '-c', path.join(tmp, 'nats.conf')], {
          cwd: tmp,
          env: { PATH: process.env.PATH ?? '', SERVER_NAME: 'argocd-agent-nats-0', ...vars },
        }).then(
          (r) => `${r.stdout}${r.stderr}`,
          (err: { stdout?: string; stderr?: string }) => `failed: ${err.stdout ?? ''}${err.stderr ?? ''}`,
        );
      expect(await check(env)).toMatch(/configuration file .* is valid/);
      const { PULLPLANE_NATS_ADMIN_NKEY: _, ...withoutAdmin } = env;
      expect(await check(withoutAdmin)).toMatch(/failed: .*PULLPLANE_NATS_ADMIN_NKEY.* can not be found/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
