import { credentials, Metadata } from '@grpc/grpc-js';
import type { Bus } from '@pullplane/bus';
import { dialRawAgent, type RawTunnelAgent } from '@pullplane/testing';
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

/**
 * Opens a tunnel like a v1 agent, by hand, on the plaintext test gateway: it says Hello (unless
 * `hello` is false) and then only what the test makes it say. Closed after the file's tests.
 */
export async function rawAgent(
  port: number,
  agent: string,
  opts: { credential?: 'agent' | 'unmarked'; hello?: boolean; heartbeatIntervalMs?: number } = {},
): Promise<RawTunnelAgent> {
  const raw = await dialRawAgent({
    address: `127.0.0.1:${port}`,
    credentials: credentials.createInsecure(),
    metadata: metadataOf(agent, opts.credential),
    hello:
      opts.hello === false
        ? false
        : {
            minProtocolVersion: 1,
            maxProtocolVersion: 1,
            heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 30_000,
          },
  });
  cleanups.push(raw.close);
  return raw;
}
