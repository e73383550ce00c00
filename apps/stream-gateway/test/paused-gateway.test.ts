import { rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import type { Agent } from '@pullplane/agent-core';
import { type NatsServerHandle, startNatsServer, waitFor } from '@pullplane/testing';
import { Deadline, isTunnelError, type TunnelStream } from '@pullplane/tunnel';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayProcess,
  get,
  makePki,
  spawnGateway,
  startAgent,
  startBackend,
  startRouter,
  type TestPki,
} from './support.js';

// A gateway process that stops answering without closing anything (SIGSTOP: its sockets stay
// open, the kernel keeps accepting bytes): what a paused or partitioned gateway looks like.
let nats: NatsServerHandle;
let pki: TestPki;
let gateway: GatewayProcess;
let agent: Agent;
let backend: Awaited<ReturnType<typeof startBackend>>;
let proxy: Awaited<ReturnType<typeof startRouter>>;
const registry = new Registry();

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  gateway = await spawnGateway(pki, nats.url);
  backend = await startBackend('agent-p');
  agent = await startAgent('agent-p', gateway.agentAddress, pki, backend.url);
  proxy = await startRouter(nats.url, pki, undefined, {
    linksPerGateway: 1,
    // The heartbeat cannot be what notices here: it would take ten minutes.
    linkPingIntervalMs: 600_000,
    linkProbeTimeoutMs: 1_000,
    registry,
  });
  await waitFor(() => proxy.router.lookup('agent-p') !== undefined, 30_000);
}, 60_000);

afterAll(async () => {
  gateway?.child.kill('SIGCONT');
  await proxy?.close();
  await agent?.stop();
  backend?.close();
  gateway?.child.kill('SIGKILL');
  await nats?.stop();
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

function failureOf(s: TunnelStream): Promise<Error | undefined> {
  return new Promise((resolve) => {
    if (s.closed) return resolve(s.errored ?? undefined);
    s.on('close', () => resolve(s.errored ?? undefined));
    s.on('error', () => undefined);
    s.resume();
  });
}

const metric = async (name: string) =>
  Number((await registry.getSingleMetricAsString(name)).match(/^\S+ (\S+)$/m)?.[1] ?? 0);

describe('a gateway that stops answering', () => {
  it('fails a request at its deadline and drops the link under it, which is dialled again', async () => {
    const router = proxy.router;
    const ok = router.open('agent-p', get('/version'));
    expect((await ok.responseHead()).status).toBe(200);
    expect(await text(ok)).toBe('agent:agent-p GET /version');
    const [link] = router.linksTo(gateway.internalAddress);
    expect(link?.usable).toBe(true);

    gateway.child.kill('SIGSTOP');
    const stuck = router.open('agent-p', { ...get('/version'), deadline: Deadline.after(1_500) });
    const err = await failureOf(stuck);
    expect(isTunnelError(err) && err.code).toBe('TUNNEL_DEADLINE_EXCEEDED');
    // The probe the deadline sent went unanswered: the link is closed, long before any heartbeat.
    await expect.poll(() => link!.usable, { timeout: 10_000 }).toBe(false);
    expect(await metric('pullplane_router_gateway_links_open')).toBe(0);

    gateway.child.kill('SIGCONT');
    const again = router.open('agent-p', { ...get('/version'), deadline: Deadline.after(20_000) });
    expect(await text(again)).toBe('agent:agent-p GET /version');
    expect(router.linksTo(gateway.internalAddress)[0]).not.toBe(link);
    expect(await metric('pullplane_router_gateway_link_redials_total')).toBe(1);
  }, 60_000);
});
