import {
  AlwaysOnSampler,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { type HeaderAuthMethod, parseAuthMethod } from '@pullplane/auth';
import { openInitOf } from '@pullplane/router';
import { createMemoryLink, type LogicalStream, Multiplexer } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterAll, expect, it } from 'vitest';
import { createExtensionProxy, type StreamOpener } from '../src/index.js';

// The extension proxy (a real HTTP server on port 0) over a real multiplexer pair; the test
// plays the agent and answers with the trace context its Open carried.
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({
  sampler: new AlwaysOnSampler(),
  spanProcessors: [new SimpleSpanProcessor({ exporter })],
});
const opens: LogicalStream[] = [];
const link = createMemoryLink();
const gateway = new Multiplexer({ sink: link.a, idParity: 'odd' });
const agent = new Multiplexer({
  sink: link.b,
  idParity: 'even',
  onStream: (s) => {
    opens.push(s);
    s.respond(200, [{ name: 'x-seen-traceparent', value: s.open.traceparent || '-' }]);
    s.end('ok');
  },
});
link.connect(
  (f) => gateway.receive(f),
  (f) => agent.receive(f),
);
const router: StreamOpener = {
  open: (agentName, init) => {
    return gateway.open(openInitOf(init, agentName));
  },
};
const MESH = 'x-test-identity';
const proxy = createExtensionProxy({
  router,
  logger: pino({ level: 'silent' }),
  registry: new Registry(),
  host: '127.0.0.1',
  port: 0,
  auth: {
    allowed: ['argocd-server'],
    meshIdentity: parseAuthMethod(`header:${MESH}:^(.+)$`) as HeaderAuthMethod,
  },
  clusterUrlBases: [],
  requestTimeoutMs: 5_000,
  maxRequestBodyBytes: 1024,
  tracer: provider.getTracer('test'),
});
await proxy.listen();
afterAll(() => proxy.close(0));

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const traceparent = `00-${CALLER_TRACE}-00f067aa0ba902b7-01`;

async function get(headers: Record<string, string>) {
  const res = await request(`http://127.0.0.1:${proxy.port}/metrics/api/v1/query`, {
    headers: { 'argocd-target-cluster-name': 'agent-a', traceparent, ...headers },
  });
  await res.body.text();
  return res;
}

it("continues the Argo CD server's trace with a span per request, and hands the span to the agent", async () => {
  exporter.reset();
  const res = await get({ [MESH]: 'argocd-server' });
  expect(res.statusCode).toBe(200);
  const [span] = exporter.getFinishedSpans();
  expect(span?.spanContext().traceId).toBe(CALLER_TRACE);
  expect(span?.attributes).toMatchObject({
    'http.request.method': 'GET',
    'url.path': '/metrics/api/v1/query',
    'http.response.status_code': 200,
    'pullplane.agent.name': 'agent-a',
  });
  // The Open carries our span as the parent, not the caller's.
  expect(res.headers['x-seen-traceparent']).toBe(`00-${CALLER_TRACE}-${span?.spanContext().spanId}-01`);
});

it('never puts a refused caller in the trace it names, and opens nothing for it', async () => {
  exporter.reset();
  const before = opens.length;
  const res = await get({ [MESH]: 'someone-else' });
  expect(res.statusCode).toBe(403);
  const [span] = exporter.getFinishedSpans();
  expect(span?.spanContext().traceId).not.toBe(CALLER_TRACE);
  expect(span?.attributes).toMatchObject({
    'http.response.status_code': 403,
    'error.type': expect.any(String),
  });
  expect(opens.length).toBe(before);
});
