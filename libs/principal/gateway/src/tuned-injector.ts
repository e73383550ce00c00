import http2 from 'node:http2';
import { type Server, ServerCredentials } from '@grpc/grpc-js';

/** HTTP/2 receive window per stream, and for the whole connection, on the gateway's listeners. */
export const HTTP2_WINDOW = 4 * 1024 * 1024;
/** Largest HTTP/2 frame the gateway's listeners accept (a tunnel chunk is up to 1 MiB). */
export const HTTP2_MAX_FRAME_SIZE = 1024 * 1024;

/** What every session of a gateway listener advertises in its first SETTINGS frame. */
export const GATEWAY_HTTP2_SETTINGS: http2.Settings = {
  initialWindowSize: HTTP2_WINDOW,
  maxFrameSize: HTTP2_MAX_FRAME_SIZE,
};

export type ConnectionInjector = ReturnType<Server['createConnectionInjector']>;

/**
 * A grpc-js connection injector whose HTTP/2 sessions use our window and frame settings.
 *
 * grpc-js (1.14) offers no server option for them: its server reads only
 * `grpc.max_concurrent_streams` into the settings, ignores `grpc-node.flow_control_window`,
 * and builds the node:http2 server itself inside `createConnectionInjector`. So we hand
 * node:http2 the settings at that one call: `http2.createServer` is wrapped for the duration
 * of the synchronous call, which adds our settings to the options grpc-js passes and keeps
 * the server it returns, so each new session can also raise its connection window (not a
 * setting: without `setLocalWindowSize` all streams of an agent share 64 KiB per round
 * trip). Only public node:http2 and grpc-js APIs are used; no grpc-js field is read or
 * written. Should a grpc-js release stop creating the server there, this throws at startup
 * rather than leaving the listener silently on Node's defaults.
 */
export function createTunedInjector(server: Server): ConnectionInjector {
  const created: http2.Http2Server[] = [];
  const original = http2.createServer;
  const tuned = (options?: http2.ServerOptions, listener?: unknown): http2.Http2Server => {
    const merged: http2.ServerOptions = {
      ...options,
      settings: { ...options?.settings, ...GATEWAY_HTTP2_SETTINGS },
    };
    const h2 = (original as (o: http2.ServerOptions, l?: unknown) => http2.Http2Server)(merged, listener);
    created.push(h2);
    return h2;
  };
  let injector: ConnectionInjector;
  (http2 as { createServer: unknown }).createServer = tuned;
  try {
    injector = server.createConnectionInjector(ServerCredentials.createInsecure());
  } finally {
    (http2 as { createServer: unknown }).createServer = original;
  }
  if (created.length !== 1) {
    injector.destroy();
    throw new Error(
      `expected grpc-js to create one HTTP/2 server for the connection injector, saw ${created.length}: HTTP/2 settings cannot be applied`,
    );
  }
  created[0]!.on('session', (session: http2.ServerHttp2Session) => {
    try {
      session.setLocalWindowSize(HTTP2_WINDOW);
    } catch {
      // A session already torn down: nothing to raise.
    }
  });
  return injector;
}
