import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { startFakeKubeApiServer } from '@pullplane/testing';
import { clientNodeLoaded } from '@pullplane/tls-material';
import { expect, it } from 'vitest';
import { startGateway } from './in-process.js';
import { makePki } from './support.js';

// @kubernetes/client-node costs the gateway about 65 MiB of RSS: it is loaded only when the
// gateway reaches a Kubernetes API (registration, Secrets), not otherwise. This file is its own
// process, so nothing before it has loaded client-node through the lazy loader.
it('a gateway without registration or Secrets never loads client-node; one with registration does', async () => {
  const plain = await startGateway([
    '--insecure-plaintext',
    '--auth=header:x-agent-id:^([a-z0-9-]+)$',
    '--internal-auth=header:x-caller:^([a-z0-9-]+)$',
    '--internal-allowed-clients=resource-proxy',
  ]);
  try {
    expect(plain.app.gateway?.agentPort).toBeGreaterThan(0);
    expect(clientNodeLoaded()).toBe(false);
  } finally {
    await plain.app.stop();
  }

  const pki = await makePki();
  const api = await startFakeKubeApiServer();
  api.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'argocd' } });
  const key = path.join(pki.dir, 'proxy-jwt.key');
  writeFileSync(key, (await TokenAuthority.generate({ audience: 'resource-proxy' })).exportPrivateKeyPem());
  const registering = await startGateway([
    `--tls-cert=${pki.serverCert}`,
    `--tls-key=${pki.serverKey}`,
    `--root-ca-path=${pki.ca}`,
    '--resource-proxy-url=https://argocd-agent-resource-proxy.argocd.svc:9090',
    `--registration-token-key-path=${key}`,
    `--registration-ca-path=${pki.ca}`,
    `--kubeconfig=${await api.writeKubeconfig(path.join(pki.dir, 'principal.kubeconfig'))}`,
  ]);
  try {
    expect(clientNodeLoaded()).toBe(true);
  } finally {
    await registering.app.stop();
    await api.close();
  }
});
