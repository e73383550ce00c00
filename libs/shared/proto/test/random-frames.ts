// Seeded random frames for the codec property and fuzz tests: every frame kind, every field
// set or left at its zero value, boundary numbers, empty/large/unicode/binary values, views at
// odd offsets, unknown fields of every wire type. Failures reproduce from the seed.
import { create } from '@bufbuild/protobuf';
import {
  AcceptedSchema,
  BatchSchema,
  DataSchema,
  EndSchema,
  ExtensionRequestHeadSchema,
  type Frame,
  FrameSchema,
  GoAwaySchema,
  HeaderSchema,
  HelloSchema,
  HttpRequestHeadSchema,
  OpenSchema,
  PingSchema,
  PongSchema,
  RedisRequestHeadSchema,
  RegistrationSchema,
  ResetSchema,
  ResponseHeadSchema,
  WelcomeSchema,
  WindowUpdateSchema,
} from '../src/gen/pullplane/tunnel/v1/tunnel_pb.js';

/** xorshift32: small, fast, deterministic. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s / 0x1_0000_0000;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

const UINT32_EDGES = [
  1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 268_435_455, 268_435_456, 0xffff_ffff,
];

export interface Generated {
  frame: Frame;
  /** Contains text that UTF-8 cannot carry unchanged (a lone surrogate, a leading BOM). */
  lossy: boolean;
}

export class FrameGenerator {
  lossy = false;
  constructor(
    readonly rng: Rng,
    /** Upper bound for "large" byte values; a few cases go this high. */
    private readonly largeBytes = 256 * 1024,
  ) {}

  generate(): Generated {
    this.lossy = false;
    const frame = this.frame(0);
    return { frame, lossy: this.lossy };
  }

  uint32(): number {
    const r = this.rng;
    if (r.chance(0.3)) return 0;
    if (r.chance(0.4)) return r.pick(UINT32_EDGES);
    return r.chance(0.5) ? r.int(200) : r.int(0x1_0000_0000);
  }

  int32(): number {
    const r = this.rng;
    if (r.chance(0.3)) return 0;
    if (r.chance(0.4)) return r.int(9);
    return r.pick([-1, -2_147_483_648, 2_147_483_647, -129, 300, r.int(0x1_0000_0000) | 0]);
  }

  string(): string {
    const r = this.rng;
    if (r.chance(0.3)) return '';
    const kind = r.int(7);
    const len = r.chance(0.2) ? 32 + r.int(300) : r.int(32);
    let s = '';
    for (let i = 0; i < len; i++) {
      switch (kind) {
        case 0:
        case 1:
          s += String.fromCharCode(0x20 + r.int(0x5f));
          break;
        case 2:
          s += String.fromCharCode(r.int(0x80));
          break;
        case 3:
          s += String.fromCharCode(r.pick([0xe9, 0x3b1, 0x7ff, 0x800, 0x4e2d, 0xffef, 0xfffd]));
          break;
        case 4:
          s += String.fromCodePoint(r.pick([0x1f600, 0x10000, 0x10ffff, 0x1d11e]));
          break;
        case 5: {
          // Lone surrogates: TextEncoder writes U+FFFD, so the text does not survive.
          const c = r.pick([0xd800, 0xdbff, 0xdc00, 0xdfff, 0x41]);
          if (c !== 0x41) this.lossy = true;
          s += String.fromCharCode(c);
          break;
        }
        default:
          s += String.fromCodePoint(r.int(0x11_0000 - 0x800) + (r.chance(0.5) ? 0 : 0x800)).replace(
            /[\ud800-\udfff]/g,
            'x',
          );
      }
    }
    // A decoder strips a leading byte order mark, so it does not survive either.
    if (s.charCodeAt(0) === 0xfeff) this.lossy = true;
    if (r.chance(0.02)) {
      this.lossy = true;
      s = `\ufeff${s}`;
    }
    return s;
  }

  bytes(allowLarge = true): Uint8Array {
    const r = this.rng;
    if (r.chance(0.3)) return new Uint8Array(0);
    const len =
      allowLarge && r.chance(0.03) ? 4096 + r.int(this.largeBytes) : r.int(r.chance(0.2) ? 5000 : 40);
    // A view at an odd offset into a larger buffer, as a decoded chunk or Buffer slice is.
    const pad = r.chance(0.5) ? r.int(9) : 0;
    const backing = new Uint8Array(len + pad + r.int(5));
    const view = backing.subarray(pad, pad + len);
    for (let i = 0; i < Math.min(len, 512); i++) view[i] = r.int(256);
    if (len > 512) view.fill(r.int(256), 512);
    return view;
  }

  /** Unknown fields with valid wire data of every wire type, numbered away from `known`. */
  unknown(known: number[]): Array<{ no: number; wireType: number; data: Uint8Array }> | undefined {
    const r = this.rng;
    if (!r.chance(0.08)) return undefined;
    const out: Array<{ no: number; wireType: number; data: Uint8Array }> = [];
    for (let i = 0, n = 1 + r.int(3); i < n; i++) {
      let no = r.pick([6, 14, 15, 16, 99, 2047, 536_870_911, 1 + r.int(50)]);
      if (known.includes(no)) no = 100 + r.int(1000);
      const wireType = r.pick([0, 1, 2, 3, 5]);
      let data: number[];
      switch (wireType) {
        case 0:
          data = r.chance(0.5) ? [r.int(128)] : [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
          break;
        case 1:
          data = Array.from({ length: 8 }, () => r.int(256));
          break;
        case 5:
          data = Array.from({ length: 4 }, () => r.int(256));
          break;
        case 2: {
          const len = r.int(20);
          data = [len, ...Array.from({ length: len }, () => r.int(256))];
          break;
        }
        default: {
          // A group: one varint field inside, then the end-group tag of the same number.
          data = [...varint((7 << 3) | 0), r.int(128), ...varint(((no << 3) | 4) >>> 0)];
        }
      }
      out.push({ no, wireType, data: new Uint8Array(data) });
    }
    return out;
  }

  private withUnknown<T extends object>(m: T, known: number[]): T {
    const u = this.unknown(known);
    if (u) (m as { $unknown?: unknown }).$unknown = u;
    return m;
  }

  headers() {
    const n = this.rng.chance(0.4) ? 0 : this.rng.int(6);
    return Array.from({ length: n }, () =>
      this.withUnknown(create(HeaderSchema, { name: this.string(), value: this.string() }), [1, 2]),
    );
  }

  httpHead() {
    return this.withUnknown(
      create(HttpRequestHeadSchema, {
        method: this.string(),
        path: this.string(),
        headers: this.headers(),
        upgrade: this.rng.chance(0.7) ? '' : this.string(),
      }),
      [1, 2, 3, 4],
    );
  }

  open() {
    const r = this.rng;
    const headKind = r.int(4);
    const head =
      headKind === 0
        ? { case: 'http' as const, value: this.httpHead() }
        : headKind === 1
          ? {
              case: 'redis' as const,
              value: this.withUnknown(
                create(RedisRequestHeadSchema, {
                  args: Array.from({ length: r.int(5) }, () => this.bytes(false)),
                  respVersion: this.uint32(),
                  pipeline: r.chance(0.5),
                }),
                [1, 2, 3],
              ),
            }
          : headKind === 2
            ? {
                case: 'extension' as const,
                value: this.withUnknown(
                  create(ExtensionRequestHeadSchema, {
                    name: this.string(),
                    ...(r.chance(0.8) ? { http: this.httpHead() } : {}),
                  }),
                  [1, 2],
                ),
              }
            : undefined;
    return this.withUnknown(
      create(OpenSchema, {
        streamId: this.uint32(),
        ...(head ? { head } : {}),
        agent: this.string(),
        requestId: this.string(),
        hasBody: r.chance(0.5),
        body: this.bytes(),
        timeoutMs: this.uint32(),
        traceparent: r.chance(0.5)
          ? '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
          : this.string(),
        tracestate: this.string(),
      }),
      [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12],
    );
  }

  frame(depth: number): Frame {
    const r = this.rng;
    const kinds = depth >= 2 ? 13 : 14;
    const k = r.int(kinds + 1);
    let kind: Frame['kind'];
    switch (k) {
      case 0:
        kind = { case: undefined };
        break;
      case 1:
      case 2:
        kind = { case: 'open', value: this.open() };
        break;
      case 3:
        kind = {
          case: 'responseHead',
          value: this.withUnknown(
            create(ResponseHeadSchema, {
              streamId: this.uint32(),
              status: this.uint32(),
              headers: this.headers(),
              endStream: r.chance(0.5),
              body: this.bytes(),
            }),
            [1, 2, 3, 4, 5],
          ),
        };
        break;
      case 4:
      case 5:
        kind = {
          case: 'data',
          value: this.withUnknown(
            create(DataSchema, { streamId: this.uint32(), chunk: this.bytes(), endStream: r.chance(0.3) }),
            [1, 2, 3],
          ),
        };
        break;
      case 6:
        kind = { case: 'end', value: this.withUnknown(create(EndSchema, { streamId: this.uint32() }), [1]) };
        break;
      case 7:
        kind = {
          case: 'reset',
          value: this.withUnknown(
            create(ResetSchema, { streamId: this.uint32(), code: this.int32(), message: this.string() }),
            [1, 2, 3],
          ),
        };
        break;
      case 8:
        kind = {
          case: 'windowUpdate',
          value: this.withUnknown(
            create(WindowUpdateSchema, { streamId: this.uint32(), increment: this.uint32() }),
            [1, 2],
          ),
        };
        break;
      case 9:
        kind = {
          case: 'hello',
          value: this.withUnknown(
            create(HelloSchema, {
              minProtocolVersion: this.uint32(),
              maxProtocolVersion: this.uint32(),
              agentVersion: this.string(),
              agentName: this.string(),
              heartbeatIntervalMs: this.uint32(),
              capabilities: r.chance(0.5) ? ['kube', 'redis'] : [],
            }),
            [1, 2, 3, 4, 5, 6],
          ),
        };
        break;
      case 10:
        kind = {
          case: 'welcome',
          value: create(WelcomeSchema, {
            protocolVersion: this.uint32(),
            gatewayId: this.string(),
            sessionId: this.string(),
            maxChunkSize: this.uint32(),
            initialWindow: this.uint32(),
          }),
        };
        break;
      case 11:
        kind = r.chance(0.5)
          ? { case: 'ping', value: create(PingSchema, { sentUnixMs: BigInt(this.uint32()) * 1000n }) }
          : { case: 'pong', value: create(PongSchema, { sentUnixMs: BigInt(this.uint32()) }) };
        break;
      case 12: {
        const which = r.int(3);
        kind =
          which === 0
            ? {
                case: 'goAway',
                value: create(GoAwaySchema, { reason: this.string(), drainMs: this.uint32() }),
              }
            : which === 1
              ? { case: 'accepted', value: this.withUnknown(create(AcceptedSchema, {}), [2]) }
              : {
                  case: 'registration',
                  value: this.withUnknown(
                    create(RegistrationSchema, {
                      registered: r.chance(0.5),
                      clusterSecret: this.string(),
                      server: this.string(),
                      message: this.string(),
                    }),
                    [1, 2, 3, 4],
                  ),
                };
        break;
      }
      default:
        kind = {
          case: 'batch',
          value: this.withUnknown(
            create(BatchSchema, {
              frames: Array.from({ length: r.int(depth === 0 ? 12 : 3) }, () => this.frame(depth + 1)),
            }),
            [1],
          ),
        };
    }
    return this.withUnknown(
      create(FrameSchema, { kind }),
      FrameSchema.fields.map((f) => f.number),
    );
  }
}

export function varint(v: number): number[] {
  const out: number[] = [];
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** Every Uint8Array reachable from `value` (chunks, bodies, Redis arguments, unknown data). */
export function byteViews(value: unknown, out: Uint8Array[] = []): Uint8Array[] {
  if (value instanceof Uint8Array) out.push(value);
  else if (Array.isArray(value)) for (const v of value) byteViews(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) byteViews(v, out);
  return out;
}

/**
 * Where two decoded messages differ (a path), or undefined when they are equal. Bytes compare
 * by content (a Buffer equals a Uint8Array with the same bytes); everything else exactly.
 * Much faster than a generic deep equality on large chunks.
 */
export function difference(a: unknown, b: unknown, path = '$'): string | undefined {
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    if (!(a instanceof Uint8Array && b instanceof Uint8Array))
      return `${path}: bytes vs ${typeof a}/${typeof b}`;
    const x = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    const y = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    return x.equals(y) ? undefined : `${path}: ${x.toString('hex', 0, 40)} != ${y.toString('hex', 0, 40)}`;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!(Array.isArray(a) && Array.isArray(b))) return `${path}: array vs non-array`;
    if (a.length !== b.length) return `${path}: length ${a.length} != ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const d = difference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    if (ka.join() !== kb.join()) return `${path}: keys ${ka.join()} != ${kb.join()}`;
    for (const k of ka) {
      const d = difference(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        `${path}.${k}`,
      );
      if (d) return d;
    }
    return undefined;
  }
  return Object.is(a, b) ? undefined : `${path}: ${String(a)} != ${String(b)}`;
}
