import { create } from '@bufbuild/protobuf';
import { OpenSchema, openMessage } from '@pullplane/proto';
import { Deadline } from '@pullplane/tunnel';
import { describe, expect, it } from 'vitest';
import { openInitOf, type RouteOpenInit } from '../src/index.js';

const head: RouteOpenInit['head'] = {
  case: 'http',
  value: { method: 'GET', path: '/api/v1/pods', headers: [{ name: 'a', value: 'b' }] },
};

describe('openInitOf', () => {
  it('carries every field of the route init, the agent, and what is left of the deadline', () => {
    const deadline = Deadline.after(30_000);
    const init = openInitOf(
      {
        head,
        requestId: 'r1',
        hasBody: true,
        body: new Uint8Array([1, 2]),
        traceparent: 'tp',
        tracestate: 'ts',
        deadline,
      },
      'agent-a',
    );
    expect(init.timeoutMs).toBeGreaterThan(29_000);
    expect(init.timeoutMs).toBeLessThanOrEqual(30_000);
    const want = create(OpenSchema, {
      head,
      agent: 'agent-a',
      requestId: 'r1',
      hasBody: true,
      body: new Uint8Array([1, 2]),
      timeoutMs: init.timeoutMs ?? 0,
      traceparent: 'tp',
      tracestate: 'ts',
      streamId: 7,
    });
    expect(openMessage(init, 7)).toEqual(want);
  });

  it('gives no timeout when the deadline bounds routing only, or there is none', () => {
    const deadline = Deadline.after(30_000);
    expect(openMessage(openInitOf({ head, deadline, routeOnly: true }, 'a'), 1).timeoutMs).toBe(0);
    const bare = openMessage(openInitOf({ head }), 1);
    expect(bare).toEqual(create(OpenSchema, { head, streamId: 1 }));
  });
});
