import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { DEFAULT_BACKEND_OPTIONS } from '@pullplane/extension-config';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BackendCall, dispatchCall } from '../src/backend-call.js';
import { BackendPool } from '../src/backend-pool.js';

// A real HTTP backend that holds each request until the test lets it go, and names the
// connection each request came on: what the pool keeps, reuses and closes is read off the
// backend's side.
let backend: http.Server;
let origin: URL;
const held: Array<() => void> = [];
let waiting: (() => void) | undefined;
const sockets = new Map<Socket, number>();
const closed: number[] = [];
let closedWaiter: (() => void) | undefined;
const pools: BackendPool[] = [];

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    const id = sockets.get(req.socket)!;
    const answer = () => res.end(String(id));
    if (req.url === '/echo') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.end(`expect=${req.headers.expect ?? 'none'} body=${body}`));
      return;
    }
    if (req.url === '/hold') {
      held.push(answer);
      waiting?.();
    } else answer();
  });
  // It keeps connections (and says so, Keep-Alive: timeout=60) longer than any pool here: a
  // connection that closes was closed by the pool.
  backend.keepAliveTimeout = 60_000;
  backend.on('connection', (s: Socket) => {
    const id = sockets.size + closed.length + 1;
    sockets.set(s, id);
    s.on('close', () => {
      sockets.delete(s);
      closed.push(id);
      closedWaiter?.();
    });
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  origin = new URL(`http://127.0.0.1:${(backend.address() as AddressInfo).port}`);
});

afterEach(async () => {
  for (const p of pools.splice(0)) p.destroy();
  backend.closeAllConnections();
  await until(() => sockets.size === 0);
  closed.length = 0;
});

afterAll(() => backend.close());

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise<void>((r) => (closedWaiter = r));
  closedWaiter = undefined;
}

async function heldCount(n: number): Promise<void> {
  while (held.length < n) await new Promise<void>((r) => (waiting = r));
  waiting = undefined;
}

function pool(options: Partial<typeof DEFAULT_BACKEND_OPTIONS> = {}): BackendPool {
  const p = new BackendPool(origin, { ...DEFAULT_BACKEND_OPTIONS, ...options });
  pools.push(p);
  return p;
}

/** One GET through the pool: resolves with the backend's connection id, or rejects. */
function get(p: BackendPool, path: string): { done: Promise<number>; call: BackendCall } {
  let body = '';
  let call!: BackendCall;
  const done = new Promise<number>((resolve, reject) => {
    call = dispatchCall(
      p,
      { path, method: 'GET', headers: {} },
      {
        onResponse: () => undefined,
        onData: (c) => {
          body += c.toString();
          return true;
        },
        onEnd: () => resolve(Number(body)),
        onError: reject,
      },
    );
  });
  return { done, call };
}

describe('extension backend pool', () => {
  it('keeps at most maxIdleConnections idle: the others close as their requests end, and the kept one is reused', async () => {
    const p = pool({ maxIdleConnections: 1 });
    const calls = [get(p, '/hold'), get(p, '/hold'), get(p, '/hold')];
    await heldCount(3);
    expect(p.sizes).toEqual({ busy: 3, idle: 0 });
    expect(sockets.size).toBe(3);
    for (const answer of held.splice(0)) answer();
    const ids = await Promise.all(calls.map((c) => c.done));
    expect(new Set(ids).size).toBe(3);
    // Two of the three connections close; the one kept serves the next request.
    await until(() => closed.length === 2);
    expect(p.sizes).toEqual({ busy: 0, idle: 1 });
    const kept = [...sockets.values()];
    expect(kept).toHaveLength(1);
    expect(await get(p, '/').done).toBe(kept[0]);
  });

  it('reuses one connection for requests one after another', async () => {
    const p = pool();
    const first = await get(p, '/').done;
    expect(await get(p, '/').done).toBe(first);
    expect(await get(p, '/').done).toBe(first);
    expect(sockets.size).toBe(1);
  });

  it('closes a connection left idle for idleConnectionTimeout, and opens a new one for the next request', async () => {
    const p = pool({ idleConnectionTimeoutMs: 100 });
    const first = await get(p, '/').done;
    await until(() => closed.includes(first));
    const second = await get(p, '/').done;
    expect(second).not.toBe(first);
  });

  it('keeps none idle with maxIdleConnections 0', async () => {
    const p = pool({ maxIdleConnections: 0 });
    const first = await get(p, '/').done;
    await until(() => closed.includes(first));
    expect(p.sizes).toEqual({ busy: 0, idle: 0 });
  });

  it('a retired pool closes its idle connections at once and a busy one when its request ends', async () => {
    const p = pool();
    const busy = get(p, '/hold');
    await heldCount(1);
    const idleId = await get(p, '/').done;
    const busyId = [...sockets.values()].find((id) => id !== idleId)!;
    expect(p.sizes).toEqual({ busy: 1, idle: 1 });
    p.retire();
    await until(() => closed.includes(idleId));
    expect(closed).not.toContain(busyId);
    held.shift()!();
    expect(await busy.done).toBe(busyId);
    await until(() => closed.includes(busyId));
    expect(p.sizes).toEqual({ busy: 0, idle: 0 });
  });

  it('sends a body whose request asked for 100-continue without the Expect header (undici refuses one)', async () => {
    const p = pool();
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      dispatchCall(
        p,
        {
          path: '/echo',
          method: 'POST',
          headers: { expect: '100-continue', 'content-length': '5' },
          body: Buffer.from('hello'),
        },
        {
          onResponse: () => undefined,
          onData: (c) => {
            text += c.toString();
            return true;
          },
          onEnd: () => resolve(text),
          onError: reject,
        },
      );
    });
    expect(answer).toBe('expect=none body=hello');
  });

  it('an aborted call frees its connection for the next request without leaking it as busy', async () => {
    const p = pool();
    const c = get(p, '/hold');
    await heldCount(1);
    c.call.abort();
    await expect(c.done).rejects.toThrow(/requester went away/);
    expect(p.sizes.busy).toBe(0);
    held.splice(0);
    expect(typeof (await get(p, '/').done)).toBe('number');
  });
});
