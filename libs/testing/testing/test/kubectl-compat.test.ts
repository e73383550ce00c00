import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir, seedArgoDemo } from '../src/index.js';
import { startKubeFixture } from './kube-helpers.js';

const manifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: compat, namespace: default}
data: {k: v}
`;

/**
 * The kubectl on PATH may be a version dispatcher that picks a client matching the
 * server's minor version, so different gitVersions exercise different kubectl releases
 * (v2beta1 aggregated discovery for 1.27, v2 for newer ones).
 */
describe.each(['v1.27.16', 'v1.30.4', 'v1.33.1'])('kubectl against a %s fake', (gitVersion) => {
  it('gets, applies server-side and reads back', async () => {
    const kube = await startKubeFixture({ gitVersion });
    try {
      seedArgoDemo(kube.server.store, { apps: ['one'], replicas: 1, applicationNamespace: null });
      expect(await kube.ok('get', 'deploy', '-n', 'demo')).toMatch(/one\s+1\/1/);
      const file = join(makeTempDir('compat-'), 'cm.yaml');
      await writeFile(file, manifest);
      expect(await kube.ok('apply', '--server-side', '-f', file)).toContain('serverside-applied');
      expect(await kube.ok('get', 'cm', 'compat', '-o', 'jsonpath={.data.k}')).toBe('v');
    } finally {
      await kube.server.close();
    }
  });
});

describe('legacy discovery', () => {
  it('kubectl falls back to per-group discovery when aggregated discovery is off', async () => {
    const kube = await startKubeFixture({ aggregatedDiscovery: false });
    try {
      seedArgoDemo(kube.server.store, { apps: ['two'], replicas: 1 });
      expect(await kube.ok('get', 'deploy', '-n', 'demo')).toMatch(/two\s+1\/1/);
      const paths = kube.server.requests.map((r) => r.path);
      expect(paths).toContain('/apis/apps/v1');
      expect(paths).toContain('/api/v1');
    } finally {
      await kube.server.close();
    }
  });
});
