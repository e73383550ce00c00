import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { lastDecodeWork } from '../src/codec/frame-decoder.js';
import {
  batchFrame,
  dataFrame,
  decodeFrame,
  encodeFrame,
  endFrame,
  type Frame,
  frame,
  HttpRequestHeadSchema,
  negotiateVersion,
  type OpenMessageInit,
  OpenSchema,
  openMessage,
  ResetCode,
  resetFrame,
  responseHeadFrame,
  windowUpdateFrame,
} from '../src/index.js';

/** Deterministic PRNG so failures reproduce. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 0x1_0000_0000;
  };
}

describe('frame codec', () => {
  it('round-trips every frame kind', () => {
    const frames = [
      frame({
        case: 'hello',
        value: {
          minProtocolVersion: 1,
          maxProtocolVersion: 1,
          agentName: 'a',
          agentVersion: '1',
          heartbeatIntervalMs: 30_000,
          capabilities: ['kube'],
        },
      }),
      frame({
        case: 'open',
        value: {
          streamId: 7,
          agent: 'a',
          hasBody: true,
          timeoutMs: 30_000,
          traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          tracestate: 'congo=t61rcWkgMzE',
          head: {
            case: 'http',
            value: {
              method: 'GET',
              path: '/api?x=1',
              headers: [{ name: 'Accept', value: 'application/json' }],
            },
          },
        },
      }),
      frame({
        case: 'open',
        value: {
          streamId: 9,
          head: {
            case: 'redis',
            value: { args: [Buffer.from('GET'), Buffer.from([0, 255, 13, 10])], respVersion: 3 },
          },
        },
      }),
      frame({ case: 'data', value: { streamId: 7, chunk: Buffer.alloc(70_000, 3) } }),
      frame({
        case: 'registration',
        value: {
          registered: true,
          clusterSecret: 'argocd/cluster-east',
          server: 'https://argocd-agent-resource-proxy.argocd.svc:9090/clusters/east',
        },
      }),
      frame({
        case: 'responseHead',
        value: {
          streamId: 9,
          status: 200,
          headers: [{ name: 'a', value: 'b' }],
          body: Buffer.from('{}'),
          endStream: true,
        },
      }),
      frame({ case: 'data', value: { streamId: 9, chunk: Buffer.from('tail'), endStream: true } }),
      frame({ case: 'ping', value: { sentUnixMs: 1_700_000_000_000n } }),
      frame({ case: 'accepted', value: {} }),
      frame({ case: 'reset', value: { streamId: 7, code: 6, message: 'gone' } }),
      frame({
        case: 'batch',
        value: {
          frames: [
            frame({ case: 'end', value: { streamId: 7 } }),
            frame({ case: 'windowUpdate', value: { streamId: 7, increment: 65536 } }),
          ],
        },
      }),
      frame({ case: 'goAway', value: { reason: 'bye', drainMs: 5000 } }),
    ];
    for (const f of frames) expect(decodeFrame(encodeFrame(f))).toEqual(f);
  });

  it('turns random and mutated bytes into a frame or an Error, never a crash or a hang', () => {
    const next = rng(42);
    const valid = encodeFrame(
      frame({
        case: 'open',
        value: { streamId: 1, head: { case: 'http', value: { method: 'GET', path: '/', headers: [] } } },
      }),
    );
    let errors = 0;
    let frames = 0;
    for (let i = 0; i < 20_000; i++) {
      let bytes: Buffer;
      if (i % 2 === 0) {
        bytes = Buffer.from(Array.from({ length: Math.floor(next() * 64) }, () => Math.floor(next() * 256)));
      } else {
        bytes = Buffer.from(valid);
        for (let m = 0; m < 1 + Math.floor(next() * 4); m++)
          bytes[Math.floor(next() * bytes.length)] = Math.floor(next() * 256);
      }
      try {
        decodeFrame(bytes);
        frames++;
      } catch (err) {
        // Not a crash: an Error of the decoder's own, not a TypeError from reading past the end.
        expect(err).toBeInstanceOf(Error);
        expect(err).not.toBeInstanceOf(TypeError);
        errors++;
      }
      // Not a hang: the decoder read at most one tag per input byte, so its work is bounded by
      // the input, whatever the input says (a loop that stopped consuming would exceed this).
      expect(lastDecodeWork()).toBeLessThanOrEqual(bytes.length);
    }
    expect(errors).toBeGreaterThan(1_000);
    expect(frames).toBeGreaterThan(1_000);
  });
});

describe('protocol version negotiation', () => {
  it('picks the highest common version or names both ranges', () => {
    // v2 sides still serve v1 peers; the highest common version wins.
    expect(negotiateVersion(1, 1)).toEqual({ ok: true, version: 1 });
    expect(negotiateVersion(1, 3)).toEqual({ ok: true, version: 2 });
    expect(negotiateVersion(2, 2)).toEqual({ ok: true, version: 2 });
    expect(negotiateVersion(3, 4)).toEqual({
      ok: false,
      message: 'incompatible tunnel protocol: peer speaks v3-4, this side speaks v1-2',
    });
    expect(negotiateVersion(0, 0)).toEqual({
      ok: false,
      message: 'peer did not announce a protocol version',
    });
  });
});

describe('hot frame constructors', () => {
  it('build the same objects as frame(), property for property and in the same order', () => {
    const pairs: Array<[Frame, Frame]> = [
      [
        dataFrame(3, Buffer.from('x'), true),
        frame({ case: 'data', value: { streamId: 3, chunk: Buffer.from('x'), endStream: true } }),
      ],
      [endFrame(5), frame({ case: 'end', value: { streamId: 5 } })],
      [windowUpdateFrame(7, 1024), frame({ case: 'windowUpdate', value: { streamId: 7, increment: 1024 } })],
      [
        resetFrame(9, ResetCode.CANCEL, 'gone'),
        frame({ case: 'reset', value: { streamId: 9, code: ResetCode.CANCEL, message: 'gone' } }),
      ],
      [
        responseHeadFrame(11, 200, [{ name: 'a', value: 'b' }]),
        frame({
          case: 'responseHead',
          value: { streamId: 11, status: 200, headers: [{ name: 'a', value: 'b' }] },
        }),
      ],
      [batchFrame([endFrame(1)]), frame({ case: 'batch', value: { frames: [endFrame(1)] } })],
    ];
    const shape = (v: unknown): unknown =>
      v instanceof Uint8Array
        ? [...v]
        : Array.isArray(v)
          ? v.map(shape)
          : v && typeof v === 'object'
            ? Object.entries(v).map(([k, x]) => [k, shape(x)])
            : v;
    for (const [fast, reference] of pairs) {
      expect(shape(fast)).toEqual(shape(reference));
      expect(encodeFrame(fast).equals(encodeFrame(reference))).toBe(true);
    }
  });
});

describe('openMessage', () => {
  const shape = (v: unknown): unknown =>
    v instanceof Uint8Array
      ? ['bytes', ...v]
      : Array.isArray(v)
        ? v.map(shape)
        : v && typeof v === 'object'
          ? Object.entries(v).map(([k, x]) => [k, shape(x)])
          : v;
  const inits: OpenMessageInit[] = [
    {},
    { head: { case: 'http', value: { method: 'GET', path: '/api/v1/pods', headers: [] } } },
    {
      head: {
        case: 'http',
        value: {
          method: 'POST',
          path: '/api/v1/namespaces/a/pods/p/exec',
          headers: [
            { name: 'content-type', value: 'application/json' },
            { name: 'x-empty', value: '' },
          ],
          upgrade: 'websocket',
        },
      },
      agent: 'agent-a',
      requestId: 'r-1',
      hasBody: true,
      body: Buffer.from('{"a":1}'),
      timeoutMs: 30_000,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'k=v',
    },
    { head: { case: 'redis', value: { args: [Buffer.from('GET'), Buffer.from('k')], respVersion: 3 } } },
    { head: { case: 'redis', value: { pipeline: true } }, body: Buffer.from('*1\r\n$4\r\nPING\r\n') },
    { head: { case: 'extension', value: { name: 'metrics' } } },
    {
      head: {
        case: 'extension',
        value: {
          name: 'metrics',
          http: { method: 'GET', path: '/x?y=1', headers: [{ name: 'a', value: 'b' }] },
        },
      },
    },
  ];
  it('builds what create(OpenSchema) builds, property for property, in the same order, to the same bytes', () => {
    for (const init of inits) {
      const fast = openMessage(init, 7);
      const reference = create(OpenSchema, { ...init, streamId: 7 });
      expect(shape(fast)).toEqual(shape(reference));
      const asFrames = [frame({ case: 'open', value: fast }), frame({ case: 'open', value: reference })];
      expect(encodeFrame(asFrames[0]!).equals(encodeFrame(asFrames[1]!))).toBe(true);
    }
  });

  it('keeps a head that is already a message, as create() does', () => {
    const http = create(HttpRequestHeadSchema, { method: 'GET', path: '/' });
    const open = openMessage({ head: { case: 'http', value: http } }, 1);
    expect(open.head.value).toBe(http);
  });
});
