import { createMetricsRegistry, createOpsServer } from '@pullplane/telemetry';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { opsOptions, serviceOps } from '../src/index.js';

const logger = pino({ level: 'silent' });

describe('opsOptions', () => {
  it("names the family's main service's ports as argocd-agent does, HEALTH_CHECK_PORT included", () => {
    expect(opsOptions({ family: 'principal', metricsPort: 8000, healthzPort: 8003 })).toEqual([
      expect.objectContaining({
        flag: 'metrics-port',
        default: 8000,
        env: 'ARGOCD_PRINCIPAL_METRICS_PORT',
        paramsKey: 'principal.metrics.port',
      }),
      expect.objectContaining({
        flag: 'healthz-port',
        default: 8003,
        env: ['ARGOCD_PRINCIPAL_HEALTHZ_PORT', 'ARGOCD_PRINCIPAL_HEALTH_CHECK_PORT'],
        paramsKey: 'principal.healthz.port',
      }),
      expect.objectContaining({
        flag: 'log-level',
        default: 'info',
        values: ['trace', 'debug', 'info', 'warn', 'error'],
        env: 'ARGOCD_PRINCIPAL_LOG_LEVEL',
        paramsKey: 'principal.log.level',
      }),
    ]);
    expect(opsOptions({ family: 'agent', metricsPort: 8181, healthzPort: 8002 })).toEqual([
      expect.objectContaining({ env: 'ARGOCD_AGENT_METRICS_PORT', paramsKey: 'agent.metrics.port' }),
      expect.objectContaining({
        env: ['ARGOCD_AGENT_HEALTHZ_PORT', 'ARGOCD_AGENT_HEALTH_CHECK_PORT'],
        paramsKey: 'agent.healthz.port',
      }),
      expect.objectContaining({ env: 'ARGOCD_AGENT_LOG_LEVEL', paramsKey: 'agent.log.level' }),
    ]);
  });

  it("puts a component's ports under its own names and keeps the family's log level", () => {
    expect(
      opsOptions({ family: 'principal', component: 'redis-proxy', metricsPort: 8002, healthzPort: 8005 }),
    ).toEqual([
      expect.objectContaining({
        default: 8002,
        env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_METRICS_PORT',
        paramsKey: 'principal.redis-proxy.metrics.port',
      }),
      expect.objectContaining({
        default: 8005,
        env: 'ARGOCD_PRINCIPAL_REDIS_PROXY_HEALTHZ_PORT',
        paramsKey: 'principal.redis-proxy.healthz.port',
      }),
      expect.objectContaining({ env: 'ARGOCD_PRINCIPAL_LOG_LEVEL', paramsKey: 'principal.log.level' }),
    ]);
  });
});

describe('serviceOps', () => {
  it('serves its own endpoints on its ports, opened at start and closed at stop', async () => {
    const ops = serviceOps(
      'gateway',
      { healthzPort: 0, metricsPort: 0 },
      { logger, registry: createMetricsRegistry() },
    );
    ops.addReadinessCheck('bus', () => 'not connected to NATS');
    const address = await ops.open();
    const res = await fetch(`http://127.0.0.1:${address!.healthzPort}/readyz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { checks: unknown }).checks).toEqual({
      bus: { ok: false, message: 'not connected to NATS' },
    });
    ops.markShuttingDown();
    expect(ops.server.shuttingDown).toBe(true);
    await ops.close();
  });

  it('adds its checks to shared endpoints under its name, and leaves opening and closing to their owner', async () => {
    const shared = createOpsServer({
      host: '127.0.0.1',
      healthzPort: 0,
      metricsPort: 0,
      registry: createMetricsRegistry(),
      logger,
    });
    const flags = { healthzPort: 1, metricsPort: 1 };
    const a = serviceOps('redis-proxy', flags, { logger, registry: createMetricsRegistry(), ops: shared });
    const b = serviceOps('resource-proxy', flags, { logger, registry: createMetricsRegistry(), ops: shared });
    // Both have a `bus` check: on one server they must not collide.
    a.addReadinessCheck('bus', () => true);
    b.addReadinessCheck('bus', () => 'not connected to NATS');
    expect(await a.open()).toBeUndefined();
    a.markShuttingDown();
    expect(shared.shuttingDown).toBe(false);
    const { healthzPort } = await shared.listen();
    const res = await fetch(`http://127.0.0.1:${healthzPort}/readyz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { checks: unknown }).checks).toEqual({
      'redis-proxy/bus': { ok: true },
      'resource-proxy/bus': { ok: false, message: 'not connected to NATS' },
    });
    await a.close();
    expect((await fetch(`http://127.0.0.1:${healthzPort}/healthz`)).status).toBe(200);
    await shared.close();
  });
});
