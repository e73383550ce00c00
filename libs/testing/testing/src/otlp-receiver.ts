import net from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import {
  type AnyValue,
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
  type KeyValue,
  type OtlpSpan,
} from '@pullplane/proto';

type Request = ReturnType<typeof fromBinary<typeof ExportTraceServiceRequestSchema>>;
type Response = ReturnType<typeof create<typeof ExportTraceServiceResponseSchema>>;

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

/** One span as received, with ids as lower-case hex and attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  statusCode: number;
  attributes: Record<string, AttributeValue>;
  /** The resource the span came with (service.name, service.instance.id, …). */
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** host:port for --otlp-address (plaintext: pass --otlp-insecure). */
  readonly address: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** TCP connections accepted so far (an exporter that never dials makes none). */
  connections(): number;
  /** Resolves once `match` holds for the spans received (checked on every export). */
  waitFor(match: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function value(v: AnyValue | undefined): AttributeValue {
  const k = v?.value;
  switch (k?.case) {
    case 'stringValue':
    case 'boolValue':
    case 'doubleValue':
      return k.value;
    case 'intValue':
      // Status codes, ports: well inside a double's exact range.
      return Number(k.value);
    case 'bytesValue':
      return Buffer.from(k.value).toString('base64');
    case 'arrayValue':
      return k.value.values.map(value);
    case 'kvlistValue':
      return k.value.values.map((kv) => `${kv.key}=${String(value(kv.value))}`);
    default:
      return null;
  }
}

const flatten = (kvs: readonly KeyValue[]) => Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));

/**
 * An OTLP/gRPC trace receiver (opentelemetry.proto.collector.trace.v1.TraceService/Export)
 * on 127.0.0.1, port 0, plaintext: what a collector does, as far as tests need.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server = new Server();
  server.addService(
    {
      export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: Request) => Buffer.from(toBinary(ExportTraceServiceRequestSchema, m)),
        requestDeserialize: (b: Buffer) => fromBinary(ExportTraceServiceRequestSchema, b),
        responseSerialize: (m: Response) => Buffer.from(toBinary(ExportTraceServiceResponseSchema, m)),
        responseDeserialize: (b: Buffer) => fromBinary(ExportTraceServiceResponseSchema, b),
      },
    },
    {
      export: (call: ServerUnaryCall<Request, Response>, done: sendUnaryData<Response>) => {
        for (const rs of call.request.resourceSpans) {
          const resource = flatten(rs.resource?.attributes ?? []);
          for (const ss of rs.scopeSpans)
            for (const s of ss.spans as OtlpSpan[])
              received.push({
                traceId: hex(s.traceId),
                spanId: hex(s.spanId),
                parentSpanId: hex(s.parentSpanId),
                name: s.name,
                kind: s.kind,
                statusCode: s.status?.code ?? 0,
                attributes: flatten(s.attributes),
                resource,
              });
        }
        done(null, create(ExportTraceServiceResponseSchema));
        for (const w of waiters) w();
      },
    },
  );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );
  // A TCP front that counts connections: "no exporter dialled" is then observable.
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const front = net.createServer((socket) => {
    connections++;
    const upstream = net.connect(grpcPort, '127.0.0.1');
    sockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    const drop = () => {
      socket.destroy();
      upstream.destroy();
      sockets.delete(socket);
      sockets.delete(upstream);
    };
    socket.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const port = (front.address() as net.AddressInfo).port;
  return {
    address: `127.0.0.1:${port}`,
    spans: () => [...received],
    connections: () => connections,
    waitFor(match, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!match(received)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve([...received]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `spans received did not match in ${timeoutMs} ms: ${JSON.stringify(received, null, 1)}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => front.close(() => r()));
      server.forceShutdown();
    },
  };
}
