import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Metadata } from '@grpc/grpc-js';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent } from '@pullplane/agent-core';
import { createMemoryBus } from '@pullplane/bus';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { AgentRouter } from '@pullplane/router';
import {
  DEFAULT_INITIAL_WINDOW,
  DEFAULT_MAX_STREAM_WINDOW,
  DEFAULT_SESSION_WINDOW_BUDGET,
  MAX_CHUNK_SIZE_LIMIT,
  Multiplexer,
} from '@pullplane/tunnel';
import { expect, it } from 'vitest';
import { cleanups, logger, startGateway } from './support.js';

const MiB = 1024 * 1024;
const BODY = 48 * MiB;
const CHUNK = 64 * 1024;

it('grows the credit of a bulk response the gateway reads over the real agent tunnel within the budgets, and gives it back', async () => {
  const backend = http.createServer((_req, res) => {
    let left = BODY;
    const block = Buffer.alloc(256 * 1024, 1);
    const pump = () => {
      while (left > 0) {
        left -= block.length;
        if (!res.write(block)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  cleanups.push(() => backend.close());
  const bus = createMemoryBus();
  const processBudget = 32 * MiB;
  const gateway = await startGateway(bus, {
    authenticateAgent: () => ({ ok: true, identity: 'agent-a' }),
    authenticateInternal: () => ({ ok: true, identity: 'proxy' }),
    maxChunkSize: CHUNK,
    initialWindow: DEFAULT_INITIAL_WINDOW,
    windowBudgetBytes: processBudget,
  });
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: `http://127.0.0.1:${(backend.address() as AddressInfo).port}`, skipTLSVerify: true },
    { name: 'u', token: 't' },
  );
  const agent = new Agent({
    agentName: 'agent-a',
    agentVersion: 'test',
    target: `127.0.0.1:${gateway.agentPort}`,
    credentials: tunnelCredentials.insecure(),
    metadata: () => new Metadata(),
    heartbeatIntervalMs: 60_000,
    keepAlivePingIntervalMs: 0,
    kubeConfig: kc,
    enableResourceProxy: true,
    resourceProxyFilter: 'none',
    logger,
  });
  agent.start();
  cleanups.push(() => agent.stop());
  // The gateway as the reader (single-process mode's local route): over proxy links it relays
  // instead, the credit is the proxy's, and links.test.ts bounds what the gateway buffers.
  const router = new AgentRouter({ bus, logger, credentials: tunnelCredentials.insecure(), local: gateway });
  await router.start();
  cleanups.push(() => router.stop());
  await expect.poll(() => router.lookup('agent-a'), { timeout: 5000 }).toBeTruthy();
  const session = gateway.session('agent-a')!;

  // Data chunks the gateway receives from the agent, the largest each could be when it came (the
  // negotiated size, or a quarter of the window the gateway had granted by then), and what its
  // budgets hold meanwhile.
  const chunks: number[] = [];
  const allowed: number[] = [];
  let sessionPeak = 0;
  let processPeak = 0;
  const original = Multiplexer.prototype.receive;
  Multiplexer.prototype.receive = function (this: Multiplexer, f) {
    if (f.kind.case === 'data' && this === session.mux) {
      chunks.push(f.kind.value.chunk.byteLength);
      const stream = (this as unknown as { entries: Map<number, { recvWindow: number }> }).entries.get(
        f.kind.value.streamId,
      );
      allowed.push(Math.max(CHUNK, Math.floor((stream?.recvWindow ?? 0) / 4)));
      sessionPeak = Math.max(sessionPeak, this.windowBudget.reserved);
      processPeak = Math.max(processPeak, gateway.windowBudget.reserved);
    }
    original.call(this, f);
  };
  let received = 0;
  try {
    const s = router.open('agent-a', {
      head: { case: 'http', value: { method: 'GET', path: '/big', headers: [] } },
    });
    s.on('data', (c: Buffer) => {
      received += c.length;
    });
    await new Promise((r) => s.on('end', r));
  } finally {
    Multiplexer.prototype.receive = original;
  }
  expect(received).toBe(BODY);
  // Chunks never pass the 1 MiB limit, nor what the window granted by then allows: a chunk may
  // be as large as the agent's read of the API server's socket (over 64 KiB when reads pile up
  // on a busy machine) only once the window has grown to four times that.
  expect(Math.max(...chunks)).toBeLessThanOrEqual(MAX_CHUNK_SIZE_LIMIT);
  expect(chunks.filter((n, i) => n > allowed[i]!)).toEqual([]);
  // The stream's window grew to the 4 MiB maximum, reserved from the session's budget,
  // itself within the process's.
  expect(sessionPeak).toBe(DEFAULT_MAX_STREAM_WINDOW - DEFAULT_INITIAL_WINDOW);
  expect(sessionPeak).toBeLessThanOrEqual(DEFAULT_SESSION_WINDOW_BUDGET);
  expect(processPeak).toBeLessThanOrEqual(processBudget);
  // Once the stream is over, every grown byte of credit is given back.
  await expect.poll(() => session.mux.windowBudget.reserved).toBe(0);
  expect(gateway.windowBudget.reserved).toBe(0);
});
