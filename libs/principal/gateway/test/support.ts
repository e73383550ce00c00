import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { Bus } from '@pullplane/bus';
import { AGENT_TUNNEL_CONNECT_PATH, decodeFrame, encodeFrame, type Frame, frame } from '@pullplane/proto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll } from 'vitest';
import { type Authenticator, Gateway, type GatewayOptions } from '../src/index.js';

export const logger = pino({ level: 'silent' });

/** Teardown steps of the test file, run last first after all its tests. */
export const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Agents say who they are and what kind of credential they hold in metadata (a stand-in authenticator). */
export const byMetadata: Authenticator = (ctx) => {
  const agent = ctx.metadata.get('x-agent')[0];
  const credential = ctx.metadata.get('x-credential')[0];
  if (typeof agent !== 'string') return { ok: false, code: 'MISSING', reason: 'no x-agent' };
  return { ok: true, identity: agent, credential: credential === 'unmarked' ? 'unmarked' : 'agent' };
};

/** A plaintext gateway with both listeners on port 0, stopped after the file's tests. */
export async function startGateway(bus: Bus, overrides: Partial<GatewayOptions> = {}): Promise<Gateway> {
  const g = new Gateway({
    bus,
    logger,
    registry: new Registry(),
    agentListener: { host: '127.0.0.1', port: 0 },
    internalListener: { host: '127.0.0.1', port: 0 },
    advertiseHost: '127.0.0.1',
    authenticateAgent: byMetadata,
    authenticateInternal: byMetadata,
    maxChunkSize: 64 * 1024,
    initialWindow: 256 * 1024,
    drainTimeoutMs: 500,
    presenceRefreshMs: 30_000,
    ...overrides,
  });
  await g.start();
  cleanups.push(() => g.stop());
  return g;
}

/** Metadata naming a caller for `byMetadata`. */
export function metadataOf(agent: string, credential: 'agent' | 'unmarked' = 'agent'): Metadata {
  const md = new Metadata();
  md.set('x-agent', agent);
  md.set('x-credential', credential);
  return md;
}

export interface RawAgent {
  /** Welcome, or the error that ended the call before it. */
  welcome?: Frame;
  error?: ServiceError;
  /** Every frame the gateway sent after Welcome, in order. */
  frames: Frame[];
  /** Resolves with the path of the first HTTP Open the gateway sends this agent. */
  firstOpen: Promise<string>;
  /** Resolves when the gateway ends the call (its error, or undefined for a clean end). */
  ended: Promise<ServiceError | undefined>;
  close(): void;
}

/**
 * Opens a tunnel like an agent, by hand: it says Hello (unless `hello` is false) and then only
 * what the test makes it say; it answers nothing, not even pings. Resolves once Welcome or an
 * error arrived, keeping the call open.
 */
export function rawAgent(
  port: number,
  agent: string,
  opts: { credential?: 'agent' | 'unmarked'; hello?: boolean; heartbeatIntervalMs?: number } = {},
): Promise<RawAgent> {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  const call = client.makeBidiStreamRequest<Frame, Frame>(
    AGENT_TUNNEL_CONNECT_PATH,
    encodeFrame,
    decodeFrame,
    metadataOf(agent, opts.credential),
  );
  const close = () => {
    call.cancel();
    client.close();
  };
  cleanups.push(close);
  if (opts.hello !== false) {
    call.write(
      frame({
        case: 'hello',
        value: {
          minProtocolVersion: 1,
          maxProtocolVersion: 1,
          agentVersion: 't',
          heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 30_000,
        },
      }),
    );
  }
  const frames: Frame[] = [];
  let opened: (path: string) => void = () => undefined;
  const firstOpen = new Promise<string>((resolve) => {
    opened = resolve;
  });
  const ended = new Promise<ServiceError | undefined>((resolve) => {
    call.on('error', (error: ServiceError) => resolve(error));
    call.on('end', () => resolve(undefined));
  });
  return new Promise((resolve) => {
    call.on('data', (f: Frame) => {
      if (f.kind.case === 'welcome') resolve({ welcome: f, frames, firstOpen, ended, close });
      else frames.push(f);
      for (const x of f.kind.case === 'batch' ? f.kind.value.frames : [f])
        if (x.kind.case === 'open' && x.kind.value.head.case === 'http') opened(x.kind.value.head.value.path);
    });
    call.on('error', (error: ServiceError) => resolve({ error, frames, firstOpen, ended, close }));
  });
}
