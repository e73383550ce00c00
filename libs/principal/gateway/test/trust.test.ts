import { Client, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { parseAuthMethod } from '@pullplane/auth';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { decodeFrame, encodeFrame, type Frame, frame, GATEWAY_LINK_PATH } from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import {
  type Authenticator,
  type FlappingEvent,
  internalAuthenticator,
  ReplacementWatch,
} from '../src/index.js';
import { byMetadata, cleanups, rawAgent, startGateway } from './support.js';

/** Opens a tunnel like an agent; resolves once Welcome or an error arrived, keeping the call open. */
const connect = (port: number, agent: string, credential: 'agent' | 'unmarked') =>
  rawAgent(port, agent, { credential });
const gateway = (bus: Bus, authenticateInternal: Authenticator = byMetadata) =>
  startGateway(bus, { authenticateInternal });

describe('proxy links', () => {
  /** Opens a Link and sends an Open for agent-a; resolves with what came back and how the call ended. */
  async function tryLink(port: number, md: Metadata): Promise<{ frames: string[]; error: ServiceError }> {
    const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    cleanups.push(() => client.close());
    const call = client.makeBidiStreamRequest<Frame, Frame>(GATEWAY_LINK_PATH, encodeFrame, decodeFrame, md);
    call.write(
      frame({
        case: 'open',
        value: {
          streamId: 1,
          agent: 'agent-a',
          head: { case: 'http', value: { method: 'GET', path: '/', headers: [] } },
        },
      }),
    );
    const frames: string[] = [];
    call.on('data', (f: Frame) => frames.push(f.kind.case ?? ''));
    const error = await new Promise<ServiceError>((resolve) => call.on('error', resolve));
    return { frames, error };
  }

  it('refuses a Link that did not arrive over a checked TLS connection, before any frame', async () => {
    const internal = internalAuthenticator(parseAuthMethod('mtls'), ['resource-proxy']);
    const g = await gateway(createMemoryBus(), internal.perCall);
    await connect(g.agentPort, 'agent-a', 'agent');
    const md = new Metadata();
    md.set('x-agent', 'resource-proxy');
    const { frames, error } = await tryLink(g.internalPort, md);
    expect(error.code).toBe(status.UNAUTHENTICATED);
    expect(error.details).toMatch(/did not arrive on a TLS connection with a verified proxy certificate/);
    // Not even the Welcome: nothing about the gateway or its agents reaches a refused caller.
    expect(frames).toEqual([]);
  });

  it('serves no Link to an agent credential on the agent listener', async () => {
    const g = await gateway(createMemoryBus());
    await connect(g.agentPort, 'agent-a', 'agent');
    const md = new Metadata();
    md.set('x-agent', 'agent-b');
    const { frames, error } = await tryLink(g.agentPort, md);
    expect(error.code).toBe(status.UNIMPLEMENTED);
    expect(frames).toEqual([]);
  });

  it('refuses a Link from a caller the internal authenticator does not allow', async () => {
    const g = await gateway(createMemoryBus(), () => ({
      ok: false,
      code: 'INTERNAL_CALLER_NOT_ALLOWED',
      reason: 'agent-b may not call the internal listener',
    }));
    await connect(g.agentPort, 'agent-a', 'agent');
    const md = new Metadata();
    md.set('x-agent', 'agent-b');
    const { frames, error } = await tryLink(g.internalPort, md);
    expect(error.code).toBe(status.PERMISSION_DENIED);
    expect(frames).toEqual([]);
  });
});

describe('replacing a live tunnel', () => {
  it('never lets a certificate without a kind replace a tunnel opened with an agent credential', async () => {
    const g = await gateway(createMemoryBus());
    const real = await connect(g.agentPort, 'agent-a', 'agent');
    expect(real.welcome?.kind.case).toBe('welcome');
    const session = g.session('agent-a')!.sessionId;
    const legacy = await connect(g.agentPort, 'agent-a', 'unmarked');
    expect(legacy.error?.code).toBe(status.PERMISSION_DENIED);
    expect(legacy.error?.details).toMatch(/a certificate without a credential kind cannot replace it/);
    expect(g.session('agent-a')?.sessionId).toBe(session);
    // The other way round is the normal upgrade path: an agent credential replaces a legacy one.
    const upgraded = await connect(g.agentPort, 'agent-b', 'unmarked');
    expect(upgraded.welcome?.kind.case).toBe('welcome');
    const agentB = await connect(g.agentPort, 'agent-b', 'agent');
    expect(agentB.welcome?.kind.case).toBe('welcome');
    expect(g.session('agent-b')?.info.credential).toBe('agent');
  });

  it('keeps the agent credential across gateways too, whichever connected last', async () => {
    const bus = createMemoryBus();
    const [g1, g2] = [await gateway(bus), await gateway(bus)];
    await connect(g1.agentPort, 'agent-c', 'agent');
    const session = g1.session('agent-c')!.sessionId;
    const legacy = await connect(g2.agentPort, 'agent-c', 'unmarked');
    // g2 had no session of its own, so it accepted; presence then settles on g1's.
    expect(legacy.welcome?.kind.case).toBe('welcome');
    await expect.poll(() => g2.session('agent-c'), { timeout: 10_000 }).toBeUndefined();
    expect(g1.session('agent-c')?.sessionId).toBe(session);
    expect((await bus.presence.get('agent-c'))?.sessionId).toBe(session);
  });
});

describe('ReplacementWatch', () => {
  it('reports two holders taking turns, once per burst, and forgets replacements outside the window', () => {
    const events: FlappingEvent[] = [];
    const watch = new ReplacementWatch({ windowMs: 60_000, threshold: 3, onFlapping: (e) => events.push(e) });
    const t0 = 1_000_000;
    watch.record({ agent: 'a', from: 'A:1', to: 'B:2' }, t0);
    watch.record({ agent: 'a', from: 'B:2', to: 'A:3' }, t0 + 70_000);
    watch.record({ agent: 'b', from: 'X:1', to: 'Y:1' }, t0 + 70_001);
    expect(events).toEqual([]);
    watch.record({ agent: 'a', from: 'A:3', to: 'B:4' }, t0 + 71_000);
    expect(events).toEqual([]);
    watch.record({ agent: 'a', from: 'B:4', to: 'A:5' }, t0 + 72_000);
    expect(events).toEqual([
      {
        agent: 'a',
        replaced: 'B:4',
        replacedBy: 'A:5',
        remotes: ['B:2', 'A:3', 'B:4', 'A:5'],
        replacements: 3,
      },
    ]);
    watch.record({ agent: 'a', from: 'A:5', to: 'B:6' }, t0 + 73_000);
    expect(events).toHaveLength(1);
  });
});
