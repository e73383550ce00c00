import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Metadata } from '@grpc/grpc-js';
import { TunnelConnector } from '@pullplane/agent-core';
import { createMemoryBus } from '@pullplane/bus';
import { TUNNEL_HTTP2_MAX_FRAME_SIZE, TUNNEL_HTTP2_WINDOW, tunnelCredentials } from '@pullplane/grpc-frames';
import { AgentRouter } from '@pullplane/router';
import { DEFAULT_INITIAL_WINDOW, DEFAULT_MAX_CHUNK_SIZE } from '@pullplane/tunnel';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, expect, it } from 'vitest';
import { Gateway } from '../src/index.js';

const logger = pino({ level: 'silent' });
const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** What a raw HTTP/2 client learns from one of our servers: its SETTINGS and connection window. */
async function serverAsSeenByPeer(port: number) {
  const client = http2.connect(`http://127.0.0.1:${port}`);
  cleanups.push(() => client.destroy());
  await new Promise((r) => client.once('remoteSettings', r));
  // The server raises its connection window right after its SETTINGS; its PING ack follows,
  // so once the ack is in, the WINDOW_UPDATE has been counted.
  await new Promise<void>((resolve, reject) => client.ping((err) => (err ? reject(err) : resolve())));
  return {
    initialWindowSize: client.remoteSettings.initialWindowSize,
    maxFrameSize: client.remoteSettings.maxFrameSize,
    // What this client may send on the connection before waiting for a WINDOW_UPDATE.
    connectionWindow: client.state.remoteWindowSize,
  };
}

/** A raw HTTP/2 server standing in for a gateway: it hands over the first session a client opens. */
async function rawServer() {
  const server = http2.createServer();
  server.on('stream', (stream) => stream.respond({ ':status': 200, 'content-type': 'application/grpc' }));
  const session = new Promise<http2.ServerHttp2Session>((resolve) => server.once('session', resolve));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => server.close());
  const port = (server.address() as AddressInfo).port;
  return { port, session };
}

/** The client's settings as the server sees them, once the client's connection window is in. */
async function clientAsSeenByPeer(session: Promise<http2.ServerHttp2Session>, expectedWindow: number) {
  const s = await session;
  cleanups.push(() => s.destroy());
  // The client raises its connection window when the server's SETTINGS arrive: poll for the
  // WINDOW_UPDATE itself rather than guessing when it has been sent.
  await expect.poll(() => s.state.remoteWindowSize).toBe(expectedWindow);
  return {
    initialWindowSize: s.remoteSettings.initialWindowSize,
    maxFrameSize: s.remoteSettings.maxFrameSize,
    connectionWindow: s.state.remoteWindowSize,
  };
}

it("raises window and frame size on the gateway's agent and internal listeners, as their peers see it", async () => {
  const gateway = new Gateway({
    bus: createMemoryBus(),
    logger,
    registry: new Registry(),
    agentListener: { host: '127.0.0.1', port: 0 },
    internalListener: { host: '127.0.0.1', port: 0 },
    advertiseHost: '127.0.0.1',
    authenticateAgent: () => ({ ok: false, code: 'NO', reason: 'settings only' }),
    authenticateInternal: () => ({ ok: false, code: 'NO', reason: 'settings only' }),
    maxChunkSize: DEFAULT_MAX_CHUNK_SIZE,
    initialWindow: DEFAULT_INITIAL_WINDOW,
    drainTimeoutMs: 100,
    presenceRefreshMs: 30_000,
  });
  await gateway.start();
  cleanups.push(() => gateway.stop());
  const expected = {
    initialWindowSize: TUNNEL_HTTP2_WINDOW,
    maxFrameSize: TUNNEL_HTTP2_MAX_FRAME_SIZE,
    connectionWindow: TUNNEL_HTTP2_WINDOW,
  };
  expect(await serverAsSeenByPeer(gateway.agentPort)).toEqual(expected);
  expect(await serverAsSeenByPeer(gateway.internalPort)).toEqual(expected);
});

it("raises the stream and connection windows and the frame size of a proxy's client towards a gateway", async () => {
  const gatewayStandIn = await rawServer();
  const bus = createMemoryBus();
  const router = new AgentRouter({ bus, logger, credentials: tunnelCredentials.insecure() });
  await router.start();
  cleanups.push(() => router.stop());
  await bus.presence.put({
    agent: 'agent-a',
    gatewayId: 'elsewhere',
    internalAddress: `127.0.0.1:${gatewayStandIn.port}`,
    sessionId: 's1',
    connectedAt: new Date().toISOString(),
    lastHeartbeat: new Date().toISOString(),
    agentVersion: 'test',
    protocolVersion: 1,
  });
  await expect.poll(() => router.lookup('agent-a')).toBeTruthy();
  const stream = router.open('agent-a', {
    head: { case: 'http', value: { method: 'GET', path: '/', headers: [] } },
  });
  stream.on('error', () => {});
  cleanups.push(() => stream.destroy());
  expect(await clientAsSeenByPeer(gatewayStandIn.session, TUNNEL_HTTP2_WINDOW)).toEqual({
    initialWindowSize: TUNNEL_HTTP2_WINDOW,
    maxFrameSize: TUNNEL_HTTP2_MAX_FRAME_SIZE,
    connectionWindow: TUNNEL_HTTP2_WINDOW,
  });
});

it("raises the stream and connection windows and the frame size of the agent's tunnel client", async () => {
  const gatewayStandIn = await rawServer();
  const connector = new TunnelConnector({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gatewayStandIn.port}`,
    credentials: tunnelCredentials.insecure(),
    metadata: () => new Metadata(),
    heartbeatIntervalMs: 60_000,
    keepAlivePingIntervalMs: 0,
    capabilities: [],
    onStream: () => {},
    logger,
  });
  connector.start();
  cleanups.push(() => connector.stop());
  const window = 4 * 1024 * 1024;
  expect(await clientAsSeenByPeer(gatewayStandIn.session, window)).toEqual({
    initialWindowSize: window,
    maxFrameSize: TUNNEL_HTTP2_MAX_FRAME_SIZE,
    connectionWindow: window,
  });
});
