// A three-node JetStream cluster, as deploy/ runs NATS: the gateway creates presence with
// principal.nats.presence-replicas, and the admin's CLI, which has no replica setting, gives
// the revocation bucket as many replicas, so losing a node loses no revocation.
import { freePort, type NatsServerHandle, startNatsServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectNatsBus, DEFAULT_PRESENCE_BUCKET, revocationBucketName } from '../src/index.js';

let servers: NatsServerHandle[] = [];
const open: Bus[] = [];
beforeAll(async () => {
  const routes = [await freePort(), await freePort(), await freePort()];
  servers = await Promise.all(
    routes.map((port, i) =>
      startNatsServer({
        config: `server_name: n${i}
cluster {
  name: pullplane-test
  listen: 127.0.0.1:${port}
  routes: [${routes.map((p) => `nats://127.0.0.1:${p}`).join(', ')}]
}
`,
      }),
    ),
  );
}, 60_000);
afterAll(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
  await Promise.all(servers.map((s) => s.stop()));
});

describe('on a three-node NATS', () => {
  it('the revocation bucket the admin creates has as many replicas as the presence bucket', async () => {
    const urls = servers.map((s) => s.url);
    // Until the cluster has elected a JetStream leader, creating a bucket fails: retry.
    let gateway: Bus | undefined;
    await expect
      .poll(
        async () => {
          gateway ??= await connectNatsBus({
            servers: urls,
            name: 'gateway',
            creates: ['presence'],
            replicas: 3,
          }).catch(() => undefined);
          return gateway !== undefined;
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(true);
    open.push(gateway!);
    const admin = await connectNatsBus({ servers: urls, name: 'admin', creates: ['revocations'] });
    open.push(admin);
    await admin.revocations.add({ kind: 'agent', agent: 'east', reason: 'x', at: new Date().toISOString() });
    const info = async (stream: string) => {
      const res = await fetch(`http://127.0.0.1:${servers[0]!.monitorPort}/jsz?streams=true&config=true`);
      const body = (await res.json()) as {
        account_details?: Array<{
          stream_detail?: Array<{ name: string; config?: { num_replicas?: number } }>;
        }>;
      };
      return body.account_details?.flatMap((a) => a.stream_detail ?? []).find((s) => s.name === stream);
    };
    expect((await info(`KV_${DEFAULT_PRESENCE_BUCKET}`))?.config?.num_replicas).toBe(3);
    expect((await info(`KV_${revocationBucketName(DEFAULT_PRESENCE_BUCKET)}`))?.config?.num_replicas).toBe(3);
  }, 60_000);
});
