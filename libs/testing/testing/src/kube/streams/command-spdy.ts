import type { CommandChannels } from './command-runner.js';
import { type CommandOutcome, statusPayload } from './command-status.js';
import type { CommandStreamOptions } from './command-ws.js';
import { EXIT_SIGKILL, ProcessSignal } from './process-io.js';
import { headerValue } from './spdy-header-codec.js';
import type { SpdySession, SpdyStream } from './spdy-session.js';

/** SPDY subprotocols of exec and attach the kubelet accepts, in its order of preference. */
export const COMMAND_SPDY_PROTOCOLS = [
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
];

/** How long the client has to open every stream it announced (the kubelet's default is 30 s). */
export const DEFAULT_STREAM_CREATION_TIMEOUT_MS = 30_000;

/** After the status, how long the client gets to hang up before the server closes the session. */
const CLIENT_CLOSE_GRACE_MS = 10_000;

type StreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

/**
 * Serves one exec or attach over a SPDY session as the kubelet does: waits for the client to open
 * one stream per requested channel (`streamType` header; resize only with a TTY from v3 on),
 * accepts each with SYN_REPLY, runs, writes the status on the error stream and half-closes it.
 * The session then ends when the client hangs up (what client-go does once it read everything).
 */
export async function serveCommandOverSpdy(
  session: SpdySession,
  protocol: string,
  opts: CommandStreamOptions,
  streamCreationTimeoutMs: number,
  run: (ch: CommandChannels) => Promise<CommandOutcome>,
): Promise<CommandOutcome | undefined> {
  const expected = new Set<StreamType>(['error']);
  if (opts.stdin) expected.add('stdin');
  if (opts.stdout) expected.add('stdout');
  if (opts.stderr && !opts.tty) expected.add('stderr');
  if (opts.tty && protocol !== 'v2.channel.k8s.io' && protocol !== 'channel.k8s.io') expected.add('resize');
  const streams = new Map<StreamType, SpdyStream>();
  const complete = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), streamCreationTimeoutMs);
    const onStream = (stream: SpdyStream) => {
      stream.reply();
      const type = headerValue(stream.headers, 'streamtype') as StreamType | undefined;
      // An unexpected stream type is logged and ignored by the kubelet; so it is here.
      if (type && expected.has(type) && !streams.has(type)) streams.set(type, stream);
      if (streams.size === expected.size) done(true);
    };
    const done = (ok: boolean) => {
      clearTimeout(timer);
      session.off('stream', onStream);
      session.off('close', onClose);
      resolve(ok);
    };
    const onClose = () => done(false);
    session.on('stream', onStream);
    session.once('close', onClose);
  });
  if (!complete) {
    session.end();
    return undefined;
  }
  const gone = new AbortController();
  void session.closed.then(() =>
    gone.abort(new ProcessSignal(EXIT_SIGKILL, 'the client closed the connection')),
  );
  let outcome: CommandOutcome;
  try {
    outcome = await run({
      stdin: streams.get('stdin') ?? null,
      stdout: streams.get('stdout') ?? null,
      stderr: streams.get('stderr') ?? null,
      resize: streams.get('resize') ?? null,
      tty: opts.tty,
      signal: gone.signal,
    });
  } catch (err) {
    outcome = { kind: 'error', message: `error executing command in container: ${(err as Error).message}` };
  }
  // A command that never started leaves its output streams open: end them, or the client waits.
  for (const type of ['stdout', 'stderr'] as const) {
    const stream = streams.get(type);
    if (stream && !stream.writableEnded) stream.end();
  }
  const errorStream = streams.get('error')!;
  const payload = statusPayload(outcome, protocol, 'kubelet');
  if (!errorStream.destroyed) errorStream.end(payload);
  const grace = setTimeout(() => session.end(), CLIENT_CLOSE_GRACE_MS);
  grace.unref();
  await session.closed;
  clearTimeout(grace);
  return outcome;
}
