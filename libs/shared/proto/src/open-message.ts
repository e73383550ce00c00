import type { MessageInitShape } from '@bufbuild/protobuf';
import type {
  ExtensionRequestHead,
  Header,
  HttpRequestHead,
  Open,
  OpenSchema,
  RedisRequestHead,
} from './gen/pullplane/tunnel/v1/tunnel_pb.js';

/** What an Open is made from: the init `create(OpenSchema, …)` takes, without the stream id. */
export type OpenMessageInit = Omit<
  Exclude<MessageInitShape<typeof OpenSchema>, Open>,
  'streamId' | '$typeName'
>;

type HttpHeadInit = Exclude<MessageInitShape<typeof OpenSchema>, Open>['head'] & { case: 'http' };
type HttpInit = HttpHeadInit['value'];
type RedisInit = (Exclude<MessageInitShape<typeof OpenSchema>, Open>['head'] & { case: 'redis' })['value'];
type ExtensionInit = (Exclude<MessageInitShape<typeof OpenSchema>, Open>['head'] & {
  case: 'extension';
})['value'];

const EMPTY = new Uint8Array(0);

const isMessage = (v: object, typeName: string): boolean =>
  (v as { $typeName?: string }).$typeName === typeName;

function header(h: { name?: string; value?: string }): Header {
  if (isMessage(h, 'pullplane.tunnel.v1.Header')) return h as Header;
  return { $typeName: 'pullplane.tunnel.v1.Header', name: h.name ?? '', value: h.value ?? '' };
}

function httpHead(v: HttpInit): HttpRequestHead {
  if (isMessage(v, 'pullplane.tunnel.v1.HttpRequestHead')) return v as HttpRequestHead;
  return {
    $typeName: 'pullplane.tunnel.v1.HttpRequestHead',
    method: v.method ?? '',
    path: v.path ?? '',
    headers: v.headers ? v.headers.map(header) : [],
    upgrade: v.upgrade ?? '',
  };
}

function redisHead(v: RedisInit): RedisRequestHead {
  if (isMessage(v, 'pullplane.tunnel.v1.RedisRequestHead')) return v as RedisRequestHead;
  return {
    $typeName: 'pullplane.tunnel.v1.RedisRequestHead',
    args: v.args ? [...v.args] : [],
    respVersion: v.respVersion ?? 0,
    pipeline: v.pipeline ?? false,
  };
}

function extensionHead(v: ExtensionInit): ExtensionRequestHead {
  if (isMessage(v, 'pullplane.tunnel.v1.ExtensionRequestHead')) return v as ExtensionRequestHead;
  const head: ExtensionRequestHead = {
    $typeName: 'pullplane.tunnel.v1.ExtensionRequestHead',
    name: v.name ?? '',
  };
  if (v.http !== undefined) head.http = httpHead(v.http);
  return head;
}

function headOf(head: OpenMessageInit['head']): Open['head'] {
  switch (head?.case) {
    case 'http':
      return { case: 'http', value: httpHead(head.value) };
    case 'redis':
      return { case: 'redis', value: redisHead(head.value) };
    case 'extension':
      return { case: 'extension', value: extensionHead(head.value) };
    default:
      return { case: undefined };
  }
}

/**
 * The Open every request sends, built as `create(OpenSchema, { ...init, streamId })` builds it
 * (the same properties in the same order, so the same hidden classes and bytes) without
 * protobuf-es's reflective initialisation, which walks the schema for every message of it.
 */
export function openMessage(init: OpenMessageInit, streamId: number): Open {
  return {
    $typeName: 'pullplane.tunnel.v1.Open',
    streamId,
    head: headOf(init.head),
    agent: init.agent ?? '',
    requestId: init.requestId ?? '',
    hasBody: init.hasBody ?? false,
    body: init.body ?? EMPTY,
    timeoutMs: init.timeoutMs ?? 0,
    traceparent: init.traceparent ?? '',
    tracestate: init.tracestate ?? '',
  };
}
