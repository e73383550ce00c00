// OpenTelemetry traces across the real processes: the resource proxy (or the redis proxy), the
// stream gateway and the agent run as built apps, export over OTLP/gRPC to an in-process
// receiver, and one caller's request makes one trace: caller -> resource proxy -> gateway
// relay -> agent's cluster API call -> the API server (which gets a traceparent naming the
// agent's span). Redis commands get a span on the redis proxy and on the agent, with the
// command's name only. Without --otlp-address nothing is exported and nothing dials the collector.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { TokenAuthority } from '@pullplane/auth';
import {
  type AppProcess,
  createTestPki,
  type FakeKubeApiServer,
  freePort,
  makeTempDir,
  type NatsServerHandle,
  type OtlpReceiver,
  type ReceivedSpan,
  type RedisServerHandle,
  spawnAppProcess,
  startFakeKubeApiServer,
  startNatsServer,
  startOtlpReceiver,
  startRedisServer,
  type TestPki,
} from '@pullplane/testing';
import { Redis } from 'ioredis';
import { Agent as HttpAgent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SECRET_VALUE = 'hunter2-do-not-trace';
const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;
const STATUS_ERROR = 2;

let dir: string;
let pki: TestPki;
let nats: NatsServerHandle;
let cluster: FakeKubeApiServer;
let receiver: OtlpReceiver;
let tokens: TokenAuthority;
let files: Record<string, string>;
let kubeconfig: string;
let dispatcher: HttpAgent;
let agentRedis: RedisServerHandle;
let principalRedis: RedisServerHandle;
const running: AppProcess[] = [];

const write = (name: string, body: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, body);
  return p;
};

beforeAll(async () => {
  dir = makeTempDir('rp-tracing-');
  pki = await createTestPki();
  nats = await startNatsServer();
  agentRedis = await startRedisServer();
  principalRedis = await startRedisServer();
  receiver = await startOtlpReceiver();
  cluster = await startFakeKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'demo' } } });
  await core.createNamespacedSecret({
    namespace: 'demo',
    body: { metadata: { name: 'db' }, data: { password: Buffer.from(SECRET_VALUE).toString('base64') } },
  });
  kubeconfig = await cluster.writeKubeconfig(path.join(dir, 'cluster.kubeconfig'));
  tokens = await TokenAuthority.generate({ audience: 'resource-proxy' });
  const server = await pki.serverCert(['localhost', '127.0.0.1']);
  const agent = await pki.agentCert('agent-a');
  const proxy = await pki.proxyCert('resource-proxy');
  const redisProxy = await pki.proxyCert('redis-proxy');
  files = {
    ca: write('ca.crt', pki.ca.certPem),
    serverCert: write('tls.crt', server.certPem),
    serverKey: write('tls.key', server.keyPem),
    agentCert: write('agent.crt', agent.certPem),
    agentKey: write('agent.key', agent.keyPem),
    proxyCert: write('proxy.crt', proxy.certPem),
    proxyKey: write('proxy.key', proxy.keyPem),
    redisProxyCert: write('redis-proxy.crt', redisProxy.certPem),
    redisProxyKey: write('redis-proxy.key', redisProxy.keyPem),
    jwtKey: write('jwt.key', tokens.exportPrivateKeyPem()),
  };
  dispatcher = new HttpAgent({ connect: { ca: pki.ca.certPem } });
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await dispatcher?.close();
  await receiver?.close();
  await cluster?.close();
  await nats?.stop();
  await agentRedis?.stop();
  await principalRedis?.stop();
});

interface Trio {
  /** https://… for the resource proxy, the port for the redis proxy. */
  proxyUrl: string;
  proxyPort: number;
  proxy: AppProcess;
  gateway: AppProcess;
  agent: AppProcess;
  /** SIGTERM to all three (the drain path that flushes spans); resolves with their exit codes. */
  stop(): Promise<Array<number | null>>;
}

/**
 * The three services as separate processes. `traced`: the gateway and the agent get
 * argocd-agent's env names, the proxy our flags. Untraced, every process still sees the
 * standard OTEL_EXPORTER_OTLP_ENDPOINT pointing at the receiver: that alone must not export.
 */
async function startTrio(
  traced: boolean,
  front: 'resource-proxy' | 'redis-proxy' = 'resource-proxy',
): Promise<Trio> {
  const otelEnv = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://${receiver.address}`,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
  const agentPort = await freePort();
  const internalPort = await freePort();
  const proxyPort = await freePort();
  const gateway = spawnAppProcess(
    'stream-gateway',
    [
      '--listen-host=127.0.0.1',
      `--listen-port=${agentPort}`,
      `--internal-listen-port=${internalPort}`,
      '--advertise-address=127.0.0.1',
      `--tls-cert=${files.serverCert}`,
      `--tls-key=${files.serverKey}`,
      `--root-ca-path=${files.ca}`,
      `--nats-url=${nats.url}`,
      '--nats-insecure',
      '--metrics-port=0',
      '--healthz-port=0',
      '--drain-timeout=1s',
    ],
    {
      ...otelEnv,
      ...(traced
        ? { ARGOCD_PRINCIPAL_OTLP_ADDRESS: receiver.address, ARGOCD_PRINCIPAL_OTLP_INSECURE: 'true' }
        : {}),
    },
  );
  running.push(gateway);
  await gateway.waitForLine((l) => l.msg === 'stream gateway started', 60_000);
  const agent = spawnAppProcess(
    'agent',
    [
      '--agent-name=agent-a',
      '--server-address=127.0.0.1',
      `--server-port=${agentPort}`,
      `--tls-client-cert=${files.agentCert}`,
      `--tls-client-key=${files.agentKey}`,
      `--root-ca-path=${files.ca}`,
      `--kubeconfig=${kubeconfig}`,
      // Everything visible, so the Secret's value really crosses every hop.
      '--resource-proxy-filter=none',
      `--redis-addr=127.0.0.1:${agentRedis.port}`,
      '--metrics-port=0',
      '--healthz-port=0',
    ],
    {
      ...otelEnv,
      ...(traced ? { ARGOCD_AGENT_OTLP_ADDRESS: receiver.address, ARGOCD_AGENT_OTLP_INSECURE: 'true' } : {}),
    },
  );
  running.push(agent);
  await gateway.waitForLine((l) => l.msg === 'agent connected' && l.agent === 'agent-a', 60_000);
  const gatewayClient = (cert: string, key: string) => [
    `--gateway-cert-path=${cert}`,
    `--gateway-key-path=${key}`,
    `--gateway-ca-path=${files.ca}`,
    `--nats-url=${nats.url}`,
    '--nats-insecure',
    '--metrics-port=0',
    '--healthz-port=0',
    '--drain-timeout=1s',
    ...(traced ? [`--otlp-address=${receiver.address}`, '--otlp-insecure'] : []),
  ];
  const proxy =
    front === 'resource-proxy'
      ? spawnAppProcess(
          'resource-proxy',
          [
            '--listen-host=127.0.0.1',
            `--listen-port=${proxyPort}`,
            `--resource-proxy-cert-path=${files.serverCert}`,
            `--resource-proxy-key-path=${files.serverKey}`,
            `--resource-proxy-ca-path=${files.ca}`,
            `--token-key-path=${files.jwtKey}`,
            // The audit line of a request that went well is at debug (refusals stay at info).
            '--log-level=debug',
            ...gatewayClient(files.proxyCert!, files.proxyKey!),
          ],
          otelEnv,
        )
      : spawnAppProcess(
          'redis-proxy',
          [
            '--listen-host=127.0.0.1',
            `--listen-port=${proxyPort}`,
            `--redis-server-address=127.0.0.1:${principalRedis.port}`,
            ...gatewayClient(files.redisProxyCert!, files.redisProxyKey!),
          ],
          otelEnv,
        );
  running.push(proxy);
  await proxy.waitForLine((l) => l.msg === `${front.replace('-', ' ')} listening`, 60_000);
  const proxyUrl = `https://127.0.0.1:${proxyPort}`;
  return {
    proxyUrl,
    proxyPort,
    proxy,
    gateway,
    agent,
    stop: () => Promise.all([proxy.stop(), gateway.stop(), agent.stop()]),
  };
}

const randomHex = (bytes: number) => randomBytes(bytes).toString('hex');

/** A GET as an authenticated caller, with the caller's own trace context; retried until the route is known. */
async function callerGet(
  trio: Trio,
  token: string,
  traceparent: string,
  requestId: string,
): Promise<{ status: number; body: string }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await request(`${trio.proxyUrl}/clusters/agent-a/api/v1/namespaces/demo/secrets/db`, {
      dispatcher,
      headers: {
        authorization: `Bearer ${token}`,
        traceparent,
        tracestate: 'caller=1',
        'x-request-id': requestId,
      },
    });
    const body = await res.body.text();
    // The proxy learns where the agent is from presence: until then, 503 "not connected".
    if (res.statusCode !== 503 || Date.now() > deadline) return { status: res.statusCode, body };
    await new Promise((r) => setTimeout(r, 100)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
}

const byService = (spans: ReceivedSpan[], service: string) =>
  spans.filter((s) => s.resource['service.name'] === service);

describe('OpenTelemetry traces through the real processes', () => {
  let untracedTraceId: string;
  let connectionsAfterUntraced: number;
  let spansAfterUntraced: number;

  it('exports nothing and dials no collector without --otlp-address (OTEL_EXPORTER_OTLP_ENDPOINT alone does not turn it on)', async () => {
    const trio = await startTrio(false);
    const token = await tokens.issue('kubectl-user', { agents: ['agent-a'] });
    untracedTraceId = randomHex(16);
    const res = await callerGet(trio, token, `00-${untracedTraceId}-${randomHex(8)}-01`, 'req-untraced');
    expect(res.status).toBe(200);
    // The caller's trace context still reaches the cluster API, carried in the Open frame.
    const apiCall = cluster.requests.find((r) => r.path === '/api/v1/namespaces/demo/secrets/db');
    expect(String(apiCall?.headers.traceparent)).toContain(untracedTraceId);
    // A clean SIGTERM drain is where a batching exporter would flush: all three exit 0.
    expect(await trio.stop()).toEqual([0, 0, 0]);
    connectionsAfterUntraced = receiver.connections();
    spansAfterUntraced = receiver.spans().length;
    expect(connectionsAfterUntraced).toBe(0);
    expect(spansAfterUntraced).toBe(0);
  }, 180_000);

  it('makes one trace from the caller through proxy, gateway and agent to the API server, without secrets', async () => {
    cluster.requests.length = 0;
    const trio = await startTrio(true);
    const token = await tokens.issue('kubectl-user', { agents: ['agent-a'] });
    const traceId = randomHex(16);
    const callerSpanId = randomHex(8);
    const res = await callerGet(trio, token, `00-${traceId}-${callerSpanId}-01`, 'req-traced-1');
    expect(res.status).toBe(200);
    expect(res.body).toContain(Buffer.from(SECRET_VALUE).toString('base64'));
    // The cluster's own answer is the agent span's status: a 404 fails the client span only.
    const missingTraceId = randomHex(16);
    const missing = await request(`${trio.proxyUrl}/clusters/agent-a/api/v1/namespaces/demo/secrets/nope`, {
      dispatcher,
      headers: { authorization: `Bearer ${token}`, traceparent: `00-${missingTraceId}-${randomHex(8)}-01` },
    });
    await missing.body.text();
    expect(missing.statusCode).toBe(404);
    // A caller that does not authenticate does not get to pick our parent (or trace id).
    const forgedTraceId = randomHex(16);
    const refused = await request(`${trio.proxyUrl}/clusters/agent-a/api/v1/namespaces/demo/secrets/db`, {
      dispatcher,
      headers: {
        authorization: 'Bearer not-a-token',
        traceparent: `00-${forgedTraceId}-${randomHex(8)}-01`,
        'x-request-id': 'req-forged',
      },
    });
    await refused.body.text();
    expect(refused.statusCode).toBe(401);
    const proxyLogLine = await trio.proxy.waitForLine(
      (l) => l.msg === 'resource proxy request' && l.requestId === 'req-traced-1',
      60_000,
    );
    // Every span is exported by the time each process has drained and exited.
    expect(await trio.stop()).toEqual([0, 0, 0]);
    const spans = (
      await receiver.waitFor((all) => {
        const t = all.filter((s) => s.traceId === traceId);
        return (
          all.some((s) => s.attributes['pullplane.request.id'] === 'req-forged') &&
          all.some((s) => s.traceId === missingTraceId && s.resource['service.name'] === 'pullplane-agent') &&
          byService(t, 'pullplane-resource-proxy').length > 0 &&
          byService(t, 'pullplane-stream-gateway').length > 0 &&
          byService(t, 'pullplane-agent').length > 0
        );
      })
    ).filter((s) => s.traceId === traceId);

    const [proxySpan] = byService(spans, 'pullplane-resource-proxy');
    const [relaySpan] = byService(spans, 'pullplane-stream-gateway');
    const [agentSpan] = byService(spans, 'pullplane-agent');
    // The caller's span is the proxy span's parent; each hop is the next one's parent.
    expect(proxySpan).toMatchObject({
      parentSpanId: callerSpanId,
      name: 'GET',
      kind: SPAN_KIND_SERVER,
      attributes: {
        'http.request.method': 'GET',
        'url.path': '/clusters/agent-a/api/v1/namespaces/demo/secrets/db',
        'http.response.status_code': 200,
        'pullplane.agent.name': 'agent-a',
        'pullplane.request.id': 'req-traced-1',
      },
    });
    expect(relaySpan).toMatchObject({
      parentSpanId: proxySpan!.spanId,
      name: 'pullplane.tunnel.v1.GatewayForward/Forward',
      kind: SPAN_KIND_SERVER,
      attributes: {
        'rpc.system': 'grpc',
        'pullplane.agent.name': 'agent-a',
        'pullplane.request.id': 'req-traced-1',
        'http.response.status_code': 200,
      },
    });
    expect(agentSpan).toMatchObject({
      parentSpanId: relaySpan!.spanId,
      name: 'GET',
      kind: SPAN_KIND_CLIENT,
      attributes: {
        'http.request.method': 'GET',
        'url.path': '/api/v1/namespaces/demo/secrets/db',
        'http.response.status_code': 200,
        'server.address': '127.0.0.1',
        'pullplane.agent.name': 'agent-a',
        'pullplane.request.id': 'req-traced-1',
      },
    });
    expect(agentSpan!.statusCode).not.toBe(STATUS_ERROR);
    // The API server is asked under the agent's span.
    const apiCall = cluster.requests.find((r) => r.path === '/api/v1/namespaces/demo/secrets/db');
    expect(apiCall?.headers.traceparent).toBe(`00-${traceId}-${agentSpan!.spanId}-01`);
    const missingSpans = receiver.spans().filter((s) => s.traceId === missingTraceId);
    expect(byService(missingSpans, 'pullplane-agent')[0]).toMatchObject({
      statusCode: STATUS_ERROR,
      attributes: { 'http.response.status_code': 404 },
    });
    expect(byService(missingSpans, 'pullplane-resource-proxy')[0]).toMatchObject({
      attributes: { 'http.response.status_code': 404 },
    });
    expect(byService(missingSpans, 'pullplane-resource-proxy')[0]!.statusCode).not.toBe(STATUS_ERROR);
    const forged = receiver.spans().find((s) => s.attributes['pullplane.request.id'] === 'req-forged');
    expect(forged).toMatchObject({ parentSpanId: '', attributes: { 'http.response.status_code': 401 } });
    expect(forged!.traceId).not.toBe(forgedTraceId);
    expect(receiver.spans().some((s) => s.traceId === forgedTraceId)).toBe(false);
    // Resources: one service per app, each with an instance id.
    for (const s of [proxySpan!, relaySpan!, agentSpan!]) {
      expect(s.resource['service.instance.id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(s.resource['service.namespace']).toBe('pullplane');
    }
    // The proxy's request log line names the trace.
    expect(proxyLogLine).toMatchObject({ trace_id: traceId, span_id: proxySpan!.spanId });
    // No attribute anywhere carries the caller's token or the Secret's value.
    const everything = JSON.stringify(receiver.spans());
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(token.split('.')[2]!);
    expect(everything).not.toContain(SECRET_VALUE);
    expect(everything).not.toContain(Buffer.from(SECRET_VALUE).toString('base64'));
    // Nothing of the untraced run arrived, even now that the receiver has been dialled.
    expect(receiver.spans().some((s) => s.traceId === untracedTraceId)).toBe(false);
    expect(receiver.connections()).toBeGreaterThan(connectionsAfterUntraced);
  }, 180_000);

  it("traces a redis command on the redis proxy and on the agent's Redis, by name only", async () => {
    const local = new Redis({ host: '127.0.0.1', port: agentRedis.port, lazyConnect: true });
    await local.connect();
    // Argo CD's key as the agent's Redis holds it (the proxy's `agent-a_` cut out).
    await local.set('app|managed-resources|guestbook|1.8.3', SECRET_VALUE);
    local.disconnect();
    const trio = await startTrio(true, 'redis-proxy');
    const client = new Redis({ host: '127.0.0.1', port: trio.proxyPort, lazyConnect: true });
    await client.connect();
    const key = 'app|managed-resources|agent-a_guestbook|1.8.3';
    // The proxy learns where the agent is from presence: until then, "not connected".
    const deadline = Date.now() + 60_000;
    let value: string | null = null;
    for (;;) {
      try {
        value = await client.get(key);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100)); // wait-ok: poll interval of a loop that waits for the event under a deadline
      }
    }
    expect(value).toBe(SECRET_VALUE);
    client.disconnect();
    expect(await trio.stop()).toEqual([0, 0, 0]);
    const isGet = (s: ReceivedSpan) => s.attributes['db.system'] === 'redis' && s.name === 'GET';
    const spans = await receiver.waitFor(
      (all) =>
        byService(all, 'pullplane-redis-proxy').some((s) => isGet(s) && s.statusCode !== STATUS_ERROR) &&
        byService(all, 'pullplane-agent').some(isGet),
    );
    const proxySpan = byService(spans, 'pullplane-redis-proxy').find(
      (s) => isGet(s) && s.statusCode !== STATUS_ERROR,
    );
    const agentSpan = byService(spans, 'pullplane-agent').find(isGet);
    expect(proxySpan).toMatchObject({
      kind: SPAN_KIND_SERVER,
      attributes: { 'db.system': 'redis', 'db.operation.name': 'GET', 'pullplane.agent.name': 'agent-a' },
    });
    expect(agentSpan).toMatchObject({
      kind: SPAN_KIND_CLIENT,
      attributes: {
        'db.system': 'redis',
        'db.operation.name': 'GET',
        'pullplane.agent.name': 'agent-a',
        'server.address': '127.0.0.1',
        'server.port': agentRedis.port,
      },
    });
    const everything = JSON.stringify(receiver.spans());
    expect(everything).not.toContain('guestbook');
    expect(everything).not.toContain(SECRET_VALUE);
  }, 180_000);
});
