import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMemoryBus, onConfigReload } from '@pullplane/bus';
import { createTestPki, makeTempDir } from '@pullplane/testing';
import pino from 'pino';
import { expect, it } from 'vitest';
import {
  caBundleSpec,
  currentListenerTls,
  followListenerMaterial,
  keyPairSpec,
  type ListenerMaterial,
  openMaterial,
} from '../src/index.js';

const logger = pino({ level: 'silent' });

/** A replica's listener material read from files, as with --tls-cert-path and friends. */
async function fileMaterial() {
  const pki = await createTestPki();
  const dir = makeTempDir('listener-material-');
  const paths = { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key'), ca: join(dir, 'ca.crt') };
  const write = async () => {
    const pair = await pki.serverCert();
    writeFileSync(paths.cert, pair.certPem);
    writeFileSync(paths.key, pair.keyPem);
    writeFileSync(paths.ca, pki.ca.certPem);
    return pair;
  };
  const first = await write();
  const pair = await openMaterial(
    keyPairSpec('the listener pair', {
      kind: 'server',
      files: paths,
      required: true,
      fileOptions: '--tls-cert-path',
    }),
    logger,
  );
  const clientCa = await openMaterial(
    caBundleSpec('the callers CA', {
      kind: 'ca',
      file: paths.ca,
      required: false,
      fileOptions: '--client-ca-path',
    }),
    logger,
  );
  const reloads: string[] = [];
  const material: ListenerMaterial = {
    pair,
    clientCa,
    async reload() {
      reloads.push('reload');
      await Promise.all([pair.reload(), clientCa.reload()]);
    },
  };
  return { material, first, write, reloads };
}

it('starts from the current pair and CA, and has nothing for a plaintext listener', async () => {
  const { material, first } = await fileMaterial();
  expect(String(currentListenerTls(material)?.cert)).toBe(first.certPem);
  expect(currentListenerTls(material)?.ca).toBeDefined();
  expect(currentListenerTls({ pair: undefined, clientCa: undefined, reload: async () => undefined })).toBe(
    undefined,
  );
});

it('applies a rotated certificate on reload, and on a config-reload event for its service only', async () => {
  const { material, write, reloads } = await fileMaterial();
  const bus = createMemoryBus();
  const applied: string[] = [];
  // The CA's change may apply first, with the pair as it still was: wait for the pair wanted.
  let awaited: { cert: string; wake: () => void } | undefined;
  const followed = followListenerMaterial(material, {
    logger,
    reloadOn: (reload) => onConfigReload(bus, 'resource-proxy', reload),
    apply: (tls) => {
      applied.push(String(tls.cert));
      if (awaited?.cert === String(tls.cert)) awaited.wake();
    },
  });
  const second = await write();
  await followed.reload();
  expect(applied.at(-1)).toBe(second.certPem);

  const third = await write();
  const appliedThird = new Promise<void>((wake) => {
    awaited = { cert: third.certPem, wake };
  });
  // Another service's reload first, then ours: when ours has applied, the first would have too.
  await bus.control.publish({ type: 'config-reload', service: 'redis-proxy' });
  await bus.control.publish({ type: 'config-reload', service: 'resource-proxy' });
  await appliedThird;
  expect(applied.at(-1)).toBe(third.certPem);
  expect(reloads).toEqual(['reload', 'reload']);

  followed.stop();
  // After stop, a reload for every service reaches another follower but not this one.
  const other = new Promise<void>((r) => bus.control.subscribe(() => r()));
  await bus.control.publish({ type: 'config-reload' });
  await other;
  expect(reloads).toEqual(['reload', 'reload']);
});

it('keeps the current material when the listener refuses a rotated one, and says so', async () => {
  const { material, write } = await fileMaterial();
  const lines: Array<{ msg: string; err?: string }> = [];
  const log = pino({ level: 'error' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
  let refuse = true;
  const applied: string[] = [];
  const followed = followListenerMaterial(material, {
    logger: log,
    apply: (tls) => {
      if (refuse) throw new Error('key values mismatch');
      applied.push(String(tls.cert));
    },
  });
  await write();
  await followed.reload();
  expect(lines.at(-1)).toMatchObject({
    msg: 'could not apply TLS material; keeping the current one',
    err: 'Error: key values mismatch',
  });
  expect(applied).toEqual([]);
  refuse = false;
  const next = await write();
  await followed.reload();
  expect(applied.at(-1)).toBe(next.certPem);
  followed.stop();
});
