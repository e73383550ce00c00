import { existsSync } from 'node:fs';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, freePorts, startNatsCluster, startNatsServer, startRedisServer } from '../src/index.js';

describe('freePort', () => {
  it('returns distinct usable ports', async () => {
    const a = await freePort();
    const b = await freePort();
    expect(a).toBeGreaterThan(0);
    expect(a).not.toBe(b);
  });

  it('freePorts hands out ports asked for together that are all different (one at a time, the kernel may repeat one)', async () => {
    const ports = await freePorts(200);
    expect(ports).toHaveLength(200);
    expect(new Set(ports).size).toBe(200);
  });
});

describe('startNatsServer', () => {
  it('runs JetStream, survives stop + restart on the same port and store', async () => {
    const nats = await startNatsServer();
    try {
      let nc = await connect({ servers: nats.url });
      const kv = await new Kvm(nc).create('launcher-test');
      await kv.put('greeting', 'hello');
      expect((await kv.get('greeting'))?.string()).toBe('hello');
      await nc.close();

      await nats.stop();
      expect(nats.isRunning()).toBe(false);
      await expect(connect({ servers: nats.url, reconnect: false, timeout: 500 })).rejects.toThrow();

      const port = nats.port;
      await nats.restart();
      expect(nats.port).toBe(port);
      nc = await connect({ servers: nats.url });
      // File storage in the same store dir: the bucket and its value came back.
      const again = await new Kvm(nc).open('launcher-test');
      expect((await again.get('greeting'))?.string()).toBe('hello');
      await nc.close();

      await nats.kill();
      expect(nats.isRunning()).toBe(false);
    } finally {
      await nats.stop();
    }
  });

  it('says how to install the binary when it is missing', async () => {
    const path = process.env.PATH;
    process.env.PATH = '';
    try {
      await expect(startNatsServer()).rejects.toThrow(
        'nats-server not found on PATH: apt-get install nats-server',
      );
      await expect(startRedisServer()).rejects.toThrow(
        'redis-server not found on PATH: apt-get install redis-server',
      );
    } finally {
      process.env.PATH = path;
    }
  });
});

describe('startNatsCluster', () => {
  it('replicates a bucket over three nodes, keeps quorum with one killed, and survives a full restart', async () => {
    const cluster = await startNatsCluster({ name: 'launcher-test' });
    try {
      expect(cluster.urls.split(',')).toEqual(cluster.nodes.map((n) => n.url));
      let nc = await connect({ servers: cluster.urls.split(',') });
      const kv = await new Kvm(nc).create('cluster-test', { replicas: 3 });
      await kv.put('k', 'one');
      await nc.close();

      // Two of three keep quorum: a client of a surviving node still writes and reads.
      await cluster.nodes[0]!.kill();
      await cluster.ready();
      nc = await connect({ servers: cluster.nodes[1]!.url });
      const survivor = await new Kvm(nc).open('cluster-test');
      await survivor.put('k', 'two');
      expect((await survivor.get('k'))?.string()).toBe('two');
      await nc.close();
      await cluster.nodes[0]!.restart();

      await cluster.restart();
      expect(cluster.nodes.every((n) => n.isRunning())).toBe(true);
      nc = await connect({ servers: cluster.nodes[0]!.url });
      const again = await new Kvm(nc).open('cluster-test');
      expect((await again.get('k'))?.string()).toBe('two');
      await nc.close();
    } finally {
      await cluster.stop();
    }
  }, 120_000);
});

describe('startRedisServer', () => {
  const clients: Redis[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });

  it('serves without a password', async () => {
    const redis = await startRedisServer();
    try {
      const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
      clients.push(client);
      await client.connect();
      await client.set('k', 'v');
      expect(await client.get('k')).toBe('v');
    } finally {
      await redis.stop();
    }
  });

  it('removes its directory when stopped, and makes it again when started again', async () => {
    const redis = await startRedisServer();
    try {
      expect(existsSync(redis.dir)).toBe(true);
      await redis.stop();
      expect(existsSync(redis.dir)).toBe(false);
      await redis.restart();
      expect(existsSync(redis.dir)).toBe(true);
      const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
      clients.push(client);
      await client.connect();
      expect(await client.ping()).toBe('PONG');
    } finally {
      await redis.stop();
    }
    expect(existsSync(redis.dir)).toBe(false);
  });

  it('enforces the password', async () => {
    const redis = await startRedisServer({ password: 's3cret' });
    try {
      const anonymous = new Redis({
        host: redis.host,
        port: redis.port,
        lazyConnect: true,
        enableReadyCheck: false,
        maxRetriesPerRequest: 0,
      });
      anonymous.on('error', () => undefined);
      clients.push(anonymous);
      await anonymous.connect();
      await expect(anonymous.get('k')).rejects.toThrow(/NOAUTH/);

      const client = new Redis(redis.url, { lazyConnect: true });
      clients.push(client);
      await client.connect();
      expect(await client.ping()).toBe('PONG');
      expect(redis.url).toBe(`redis://:s3cret@127.0.0.1:${redis.port}`);

      await redis.restart();
      expect(await client.ping()).toBe('PONG');
    } finally {
      await redis.stop();
    }
  });
});
