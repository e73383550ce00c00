import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createLogger,
  createMetricsRegistry,
  createOpsServer,
  DuplicateCheckError,
  getOrCreateCounter,
  type OpsServer,
  type OpsServerOptions,
  OpsServerStateError,
} from '../src/index.js';

const logger = createLogger({ level: 'silent', name: 'test' });
const servers: OpsServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(overrides: Partial<OpsServerOptions> = {}) {
  const registry = createMetricsRegistry({ collectDefaultMetrics: false });
  const ops = createOpsServer({
    host: '127.0.0.1',
    healthzPort: 0,
    metricsPort: 0,
    registry,
    logger,
    ...overrides,
  });
  servers.push(ops);
  const ports = await ops.listen();
  const url = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
  return { ops, registry, ports, healthz: url(ports.healthzPort, ''), metrics: url(ports.metricsPort, '') };
}

async function startSplit() {
  const registry = createMetricsRegistry({ collectDefaultMetrics: false });
  // healthzPort 0 and metricsPort 0 would mean one listener; ask for two distinct "free" ports.
  const probe = createOpsServer({ host: '127.0.0.1', healthzPort: 0, metricsPort: 0, registry, logger });
  const { healthzPort } = await probe.listen();
  await probe.close();
  const ops = createOpsServer({ host: '127.0.0.1', healthzPort, metricsPort: 0, registry, logger });
  servers.push(ops);
  const ports = await ops.listen();
  return { ops, registry, ports };
}

describe('ops server on separate ports', () => {
  it('serves /healthz and /readyz on the healthz port and /metrics on the metrics port', async () => {
    const { ops, registry, ports } = await startSplit();
    expect(ports.healthzPort).not.toBe(ports.metricsPort);
    getOrCreateCounter(registry, { name: 'requests_total', help: 'Requests.' }).inc(3);
    const h = `http://127.0.0.1:${ports.healthzPort}`;
    const m = `http://127.0.0.1:${ports.metricsPort}`;

    const healthz = await fetch(`${h}/healthz`);
    expect(healthz.status).toBe(200);
    expect(await healthz.text()).toBe('ok');

    const metrics = await fetch(`${m}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(await metrics.text()).toContain('pullplane_requests_total 3');

    expect((await fetch(`${h}/metrics`)).status).toBe(404);
    expect((await fetch(`${m}/healthz`)).status).toBe(404);
    expect((await fetch(`${m}/readyz`)).status).toBe(404);
    expect(ops.shuttingDown).toBe(false);
  });
});

describe('ops server on one port', () => {
  it('serves everything on one listener when the ports are equal', async () => {
    const { ports, healthz } = await start();
    expect(ports.healthzPort).toBe(ports.metricsPort);
    expect(ports.healthzPort).toBeGreaterThan(0);
    expect((await fetch(`${healthz}/healthz`)).status).toBe(200);
    expect((await fetch(`${healthz}/readyz`)).status).toBe(200);
    expect((await fetch(`${healthz}/metrics`)).status).toBe(200);
    expect((await fetch(`${healthz}/other`)).status).toBe(404);
  });

  it('ignores query strings, answers HEAD and rejects other methods', async () => {
    const { healthz } = await start();
    expect((await fetch(`${healthz}/healthz?verbose=1`)).status).toBe(200);
    const head = await fetch(`${healthz}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    const post = await fetch(`${healthz}/readyz`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('/readyz', () => {
  it('returns 200 with the named checks when all pass', async () => {
    const { ops, healthz } = await start();
    ops.addReadinessCheck('redis', () => true);
    ops.addReadinessCheck('informer', async () => true);
    const res = await fetch(`${healthz}/readyz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({
      status: 'ready',
      checks: { redis: { ok: true }, informer: { ok: true } },
    });
  });

  it('returns 503 with failing checks and their reasons', async () => {
    const { ops, healthz } = await start();
    ops.addReadinessCheck('redis', () => true);
    ops.addReadinessCheck('bus', () => 'not connected to NATS');
    ops.addReadinessCheck('cache', () => false);
    ops.addReadinessCheck('thrower', async () => {
      throw new Error('exploded');
    });
    const res = await fetch(`${healthz}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      status: 'not ready',
      checks: {
        redis: { ok: true },
        bus: { ok: false, message: 'not connected to NATS' },
        cache: { ok: false, message: 'check failed' },
        thrower: { ok: false, message: 'exploded' },
      },
    });
  });

  it('fails checks that time out', async () => {
    const { ops, healthz } = await start({ checkTimeoutMs: 100 });
    ops.addReadinessCheck('slow', () => new Promise<boolean>(() => {}));
    ops.addReadinessCheck('fast', () => true);
    // The slow check never settles: an answer at all is the timeout having fired.
    const res = await fetch(`${healthz}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({
      checks: { slow: { ok: false, message: 'timed out after 100ms' }, fast: { ok: true } },
    });
  });

  it('uses a 2 s timeout by default', async () => {
    const { ops, healthz } = await start();
    ops.addReadinessCheck('slow', () => new Promise<boolean>((r) => setTimeout(() => r(true), 2_500)));
    const res = await fetch(`${healthz}/readyz`);
    expect(await res.json()).toMatchObject({ checks: { slow: { message: 'timed out after 2000ms' } } });
  });

  it('fails at once after markShuttingDown, without running checks', async () => {
    const { ops, healthz } = await start();
    let runs = 0;
    ops.addReadinessCheck('counting', () => {
      runs++;
      return true;
    });
    expect((await fetch(`${healthz}/readyz`)).status).toBe(200);
    ops.markShuttingDown();
    ops.markShuttingDown();
    expect(ops.shuttingDown).toBe(true);
    const res = await fetch(`${healthz}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'shutting down', checks: {} });
    expect(runs).toBe(1);
    expect((await fetch(`${healthz}/healthz`)).status).toBe(200); // still alive while draining
  });

  it('removes checks and rejects duplicate names', async () => {
    const { ops, healthz } = await start();
    const remove = ops.addReadinessCheck('bus', () => 'down');
    expect(() => ops.addReadinessCheck('bus', () => true)).toThrow(DuplicateCheckError);
    expect((await fetch(`${healthz}/readyz`)).status).toBe(503);
    remove();
    expect((await fetch(`${healthz}/readyz`)).status).toBe(200);
  });
});

describe('/healthz liveness checks', () => {
  it('fails when a liveness check fails', async () => {
    const { ops, healthz } = await start();
    let wedged = false;
    ops.addLivenessCheck('event-pump', () => (wedged ? 'no progress for 60s' : true));
    expect((await fetch(`${healthz}/healthz`)).status).toBe(200);
    wedged = true;
    const res = await fetch(`${healthz}/healthz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      status: 'unhealthy',
      checks: { 'event-pump': { ok: false, message: 'no progress for 60s' } },
    });
  });
});

describe('/metrics', () => {
  it('reports 500 when collection fails', async () => {
    const { registry, healthz } = await start();
    registry.metrics = async () => {
      throw new Error('collector broke');
    };
    const res = await fetch(`${healthz}/metrics`);
    expect(res.status).toBe(500);
  });

  it('includes default process metrics', async () => {
    const registry = createMetricsRegistry();
    const ops = createOpsServer({ host: '127.0.0.1', healthzPort: 0, metricsPort: 0, registry, logger });
    servers.push(ops);
    const { metricsPort } = await ops.listen();
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
  });
});

describe('lifecycle', () => {
  it('refuses to listen twice, closes idempotently and can listen again after close', async () => {
    const { ops, healthz } = await start();
    await expect(ops.listen()).rejects.toThrow(OpsServerStateError);
    await ops.close();
    await ops.close();
    await expect(fetch(`${healthz}/healthz`)).rejects.toThrow();
    const again = await ops.listen();
    expect((await fetch(`http://127.0.0.1:${again.healthzPort}/healthz`)).status).toBe(200);
  });

  it('rejects listen when the port is taken', async () => {
    const { ports } = await start();
    const registry = createMetricsRegistry({ collectDefaultMetrics: false });
    const clash = createOpsServer({
      host: '127.0.0.1',
      healthzPort: ports.healthzPort,
      metricsPort: ports.healthzPort,
      registry,
      logger,
    });
    await expect(clash.listen()).rejects.toThrow(/EADDRINUSE/);
    await clash.close();
  });

  it('close does not wait for keep-alive connections: it closes them itself', async () => {
    const { ops, ports } = await start();
    // An idle keep-alive connection the client never closes. Waiting for it to time out would
    // take the server's keep-alive timeout (72 s), past this test's own timeout.
    const socket = connect({ host: '127.0.0.1', port: ports.healthzPort });
    socket.on('error', () => undefined);
    // The client never ends it: a close is the server's doing (a FIN read, or a reset).
    let byServer = false;
    socket.once('end', () => {
      byServer = true;
    });
    socket.once('error', () => {
      byServer = true;
    });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    let head = '';
    const answered = new Promise<void>((r) =>
      socket.on('data', (d: Buffer) => {
        head += d.toString('latin1');
        if (head.endsWith('ok')) r();
      }),
    );
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
    await answered;
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    expect(head.toLowerCase()).toContain('connection: keep-alive');
    await ops.close();
    await closed;
    expect(byServer).toBe(true);
  });
});
