import { Client, credentials, type ServiceError, status } from '@grpc/grpc-js';
import { createMemoryBus } from '@pullplane/bus';
import {
  AGENT_TUNNEL_CONNECT_PATH,
  decodeFrame,
  encodeFrame,
  type Frame,
  frame,
  GATEWAY_FORWARD_PATH,
  GATEWAY_LINK_PATH,
} from '@pullplane/proto';
import { DEFAULT_MAX_CONCURRENT_STREAMS, TunnelErrorCode } from '@pullplane/tunnel';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { cleanups, metadataOf, rawAgent, startGateway } from './support.js';

/** A bidi call to `path` on `port` as `caller`, sending `first`; resolves with how it ended and what came back. */
async function call(
  port: number,
  path: string,
  caller: string,
  first: Frame,
): Promise<{ error?: ServiceError; frames: string[] }> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  cleanups.push(() => client.close());
  const c = client.makeBidiStreamRequest<Frame, Frame>(path, encodeFrame, decodeFrame, metadataOf(caller));
  const frames: string[] = [];
  c.on('data', (f: Frame) => frames.push(f.kind.case ?? ''));
  c.write(first);
  const error = await new Promise<ServiceError | undefined>((resolve) => {
    c.on('error', resolve);
    c.on('end', () => resolve(undefined));
  });
  return error ? { error, frames } : { frames };
}

const openFor = (agent: string, path: string) =>
  frame({
    case: 'open',
    value: { streamId: 1, agent, head: { case: 'http', value: { method: 'GET', path, headers: [] } } },
  });

/** The paths of the Open frames an agent received, in order. */
const openedPaths = (frames: Frame[]) =>
  frames
    .flatMap((f) => (f.kind.case === 'batch' ? f.kind.value.frames : [f]))
    .flatMap((f) =>
      f.kind.case === 'open' && f.kind.value.head.case === 'http' ? [f.kind.value.head.value.path] : [],
    );

describe('one listener, one service', () => {
  it('does not serve Link on the agent listener: an agent cannot reach another agent', async () => {
    const g = await startGateway(createMemoryBus());
    const victim = await rawAgent(g.agentPort, 'agent-a');
    await rawAgent(g.agentPort, 'agent-b');
    // Whichever comes first: the call's refusal, or agent-a being reached through it.
    const outcome = await Promise.race([
      call(g.agentPort, GATEWAY_LINK_PATH, 'agent-b', openFor('agent-a', '/api/v1/secrets')),
      victim.firstOpen.then((path) => ({ reachedAgentA: path })),
    ]);
    expect(outcome).toMatchObject({
      error: {
        code: status.UNIMPLEMENTED,
        details: `${GATEWAY_LINK_PATH} is not served on this listener`,
      },
      frames: [],
    });
    // The first Open agent-a ever sees is a legitimate one sent after the refusal.
    const legit = g.openLocal('agent-a', {
      head: { case: 'http', value: { method: 'GET', path: '/after', headers: [] } },
    });
    legit.on('error', () => undefined);
    expect(await victim.firstOpen).toBe('/after');
  });

  it('answers the retired Forward UNIMPLEMENTED on both listeners, saying why, and counts who tried', async () => {
    const registry = new Registry();
    const g = await startGateway(createMemoryBus(), { registry });
    const agent = await rawAgent(g.agentPort, 'agent-f');
    const onInternal = await call(
      g.internalPort,
      GATEWAY_FORWARD_PATH,
      'resource-proxy',
      openFor('agent-f', '/api/v1/secrets'),
    );
    expect(onInternal).toMatchObject({
      error: {
        code: status.UNIMPLEMENTED,
        details: `${GATEWAY_FORWARD_PATH} is retired: upgrade the proxy to a release that uses ${GATEWAY_LINK_PATH}`,
      },
      frames: [],
    });
    const onAgents = await call(g.agentPort, GATEWAY_FORWARD_PATH, 'agent-b', openFor('agent-f', '/'));
    expect(onAgents.error?.code).toBe(status.UNIMPLEMENTED);
    const stray = await registry.getSingleMetric('pullplane_gateway_stray_calls_total')?.get();
    expect(Object.fromEntries(stray?.values.map((v) => [v.labels.listener, v.value]) ?? [])).toEqual({
      internal: 1,
      agents: 1,
    });
    // Neither call reached the agent: the first Open it sees is a legitimate one sent after them.
    const legit = g.openLocal('agent-f', {
      head: { case: 'http', value: { method: 'GET', path: '/after', headers: [] } },
    });
    legit.on('error', () => undefined);
    expect(await agent.firstOpen).toBe('/after');
  });

  it('does not serve Connect on the internal listener: no tunnel is opened there', async () => {
    const g = await startGateway(createMemoryBus());
    const tried = await call(
      g.internalPort,
      AGENT_TUNNEL_CONNECT_PATH,
      'agent-c',
      frame({
        case: 'hello',
        value: {
          minProtocolVersion: 1,
          maxProtocolVersion: 1,
          agentVersion: 't',
          heartbeatIntervalMs: 30_000,
        },
      }),
    );
    expect(tried.error?.code).toBe(status.UNIMPLEMENTED);
    expect(tried.frames).toEqual([]);
    expect(g.session('agent-c')).toBeUndefined();
  });
});

describe('agent liveness', () => {
  it('drops an agent that connects and never says Hello', async () => {
    const g = await startGateway(createMemoryBus(), { helloTimeoutMs: 200 });
    const silent = await rawAgent(g.agentPort, 'agent-quiet', { hello: false });
    expect(silent.welcome).toBeUndefined();
    expect(silent.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(silent.error?.details).toBe('expected a Hello frame first, within 200 ms');
    expect(g.session('agent-quiet')).toBeUndefined();
  });

  it('drops an agent that stops sending frames (missed heartbeats)', async () => {
    const g = await startGateway(createMemoryBus(), { minIdleTimeoutMs: 100 });
    // Heartbeats every 50 ms promised, none ever sent: idle after the 150 ms it allows and a grace second.
    const silent = await rawAgent(g.agentPort, 'agent-silent', { heartbeatIntervalMs: 50 });
    expect(silent.welcome?.kind.case).toBe('welcome');
    expect(g.session('agent-silent')).toBeDefined();
    // The gateway ends the call itself: the client never cancels it.
    expect(await silent.ended).toBeUndefined();
    expect(g.session('agent-silent')).toBeUndefined();
    // It pinged the agent meanwhile (its own heartbeats), and never got an answer.
    expect(silent.frames.some((f) => f.kind.case === 'ping')).toBe(true);
  });
});

describe('per-tunnel stream cap', () => {
  it(`refuses a stream past ${DEFAULT_MAX_CONCURRENT_STREAMS} open ones with REFUSED, and takes one again when a slot frees`, async () => {
    const g = await startGateway(createMemoryBus());
    const agent = await rawAgent(g.agentPort, 'agent-busy');
    const open = (path: string) =>
      g.openLocal('agent-busy', { head: { case: 'http', value: { method: 'GET', path, headers: [] } } });
    const streams = Array.from({ length: DEFAULT_MAX_CONCURRENT_STREAMS }, (_, i) => open(`/s/${i}`));
    for (const s of streams) s.on('error', () => undefined);
    let refused: unknown;
    try {
      open('/one-too-many');
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ code: TunnelErrorCode.REFUSED });
    expect(String((refused as Error).message)).toContain(`(${DEFAULT_MAX_CONCURRENT_STREAMS})`);
    streams[0]!.reset(TunnelErrorCode.CANCELLED, 'done with it');
    const again = open('/after-a-slot-freed');
    again.on('error', () => undefined);
    await expect
      .poll(() => openedPaths(agent.frames).at(-1), { timeout: 10_000 })
      .toBe('/after-a-slot-freed');
    expect(openedPaths(agent.frames)).not.toContain('/one-too-many');
  });
});
