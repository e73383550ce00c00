import { Writable } from 'node:stream';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { type Bus, createMemoryBus } from '@pullplane/bus';
import { loadConfig } from '@pullplane/config';
import { createGatewayService, validateGatewayConfig } from '@pullplane/gateway';
import { AGENT_TUNNEL_CONNECT_PATH, decodeFrame, encodeFrame, type Frame, frame } from '@pullplane/proto';
import pino from 'pino';
import { Registry } from 'prom-client';
import { gatewayOptions } from '../src/options.js';

/** Captures the gateway's JSON log lines. */
export function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n'))
        if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}

export async function startGateway(argv: string[], bus: Bus = createMemoryBus()) {
  const { config } = loadConfig(gatewayOptions, {
    argv: [
      '--listen-host=127.0.0.1',
      '--listen-port=0',
      '--internal-listen-port=0',
      '--metrics-port=0',
      '--healthz-port=0',
      // The bus is in memory: no NATS, no NATS credentials.
      '--nats-insecure',
      ...argv,
    ],
    env: {},
    validate: (c) => validateGatewayConfig(c, {}),
  });
  const log = capture();
  const app = createGatewayService(config, {
    logger: log.logger,
    registry: new Registry(),
    bus,
  });
  await app.start();
  return { app, log, port: app.gateway!.agentPort };
}

export interface Outcome {
  welcome?: Frame;
  error?: ServiceError;
}

/** Dials Connect like an agent would, sends a Hello, and reports Welcome or the error. */
export function dial(
  port: number,
  creds = credentials.createInsecure(),
  md = new Metadata(),
  hello: Partial<{ agentName: string; min: number; max: number }> = {},
): Promise<Outcome> {
  return dialConnect(`127.0.0.1:${port}`, creds, md, hello);
}

/** `dial` for any host:port. */
export function dialConnect(
  address: string,
  creds = credentials.createInsecure(),
  md = new Metadata(),
  hello: Partial<{ agentName: string; min: number; max: number }> = {},
): Promise<Outcome> {
  const client = new Client(address, creds, { 'grpc.ssl_target_name_override': 'localhost' });
  const call = client.makeBidiStreamRequest<Frame, Frame>(
    AGENT_TUNNEL_CONNECT_PATH,
    encodeFrame,
    decodeFrame,
    md,
  );
  call.write(
    frame({
      case: 'hello',
      value: {
        minProtocolVersion: hello.min ?? 1,
        maxProtocolVersion: hello.max ?? 1,
        agentName: hello.agentName ?? '',
        agentVersion: 'test',
        heartbeatIntervalMs: 30_000,
      },
    }),
  );
  return new Promise((resolve) => {
    const done = (o: Outcome) => {
      call.cancel();
      client.close();
      resolve(o);
    };
    call.on('data', (f: Frame) => done({ welcome: f }));
    call.on('error', (error: ServiceError) => done({ error }));
  });
}
