import type { WebSocket } from 'ws';
import type { CommandChannels } from './command-runner.js';
import { type CommandOutcome, type StatusWriter, statusPayload } from './command-status.js';
import { EXIT_SIGKILL, ProcessSignal } from './process-io.js';
import { ChannelConnection } from './ws-channels.js';

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;

/** WebSocket subprotocols of exec and attach, as the kubelet accepts them ("" = none asked for). */
export const COMMAND_WS_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
];

export interface CommandStreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * Serves one exec or attach over an accepted WebSocket: channels 0–4 (stdin, stdout, stderr,
 * error, resize), the "ready" message, the final status on the error channel, then a normal close.
 * `writer` is who writes the status: the API server's translator for v5, the kubelet otherwise.
 */
export async function serveCommandOverWebSocket(
  ws: WebSocket,
  protocol: string,
  opts: CommandStreamOptions,
  writer: StatusWriter,
  run: (ch: CommandChannels) => Promise<CommandOutcome>,
): Promise<CommandOutcome> {
  const conn = new ChannelConnection(ws, {
    base64: protocol.includes('base64'),
    streamClose: protocol === 'v5.channel.k8s.io',
    channelCount: 5,
    readableChannels: opts.stdin ? [STDIN, RESIZE] : [RESIZE],
  });
  const gone = new AbortController();
  void conn.closed.then(() =>
    gone.abort(new ProcessSignal(EXIT_SIGKILL, 'the client closed the connection')),
  );
  // The first writable channel gets an empty message: the client's sign that the session is up.
  conn.send(opts.stdout ? STDOUT : opts.stderr ? STDERR : ERROR, Buffer.alloc(0));
  let outcome: CommandOutcome;
  try {
    outcome = await run({
      stdin: opts.stdin ? conn.input(STDIN) : null,
      stdout: opts.stdout ? conn.output(STDOUT) : null,
      // With a TTY the kubelet merges stderr into stdout and never opens a stderr stream.
      stderr: opts.stderr && !opts.tty ? conn.output(STDERR) : null,
      resize: conn.input(RESIZE),
      tty: opts.tty,
      signal: gone.signal,
    });
  } catch (err) {
    outcome = { kind: 'error', message: `error executing command in container: ${(err as Error).message}` };
  }
  return finish(conn, protocol, writer, outcome);
}

/** Writes a status (a refusal found after the upgrade, or a result) and closes normally. */
export async function finish(
  conn: ChannelConnection,
  protocol: string,
  writer: StatusWriter,
  outcome: CommandOutcome,
): Promise<CommandOutcome> {
  const payload = statusPayload(outcome, protocol, writer);
  if (payload) await new Promise<void>((resolve) => conn.send(ERROR, payload, () => resolve()));
  conn.close();
  return outcome;
}

/**
 * A refusal the translator reports after the WebSocket is up (the kubelet said no): the "ready"
 * message first, as always, then an InternalError naming the kubelet's answer.
 */
export async function refuseOverWebSocket(
  ws: WebSocket,
  opts: CommandStreamOptions,
  message: string,
): Promise<void> {
  const conn = new ChannelConnection(ws, {
    base64: false,
    streamClose: true,
    channelCount: 5,
    readableChannels: [],
  });
  conn.send(opts.stdout ? STDOUT : opts.stderr ? STDERR : ERROR, Buffer.alloc(0));
  await finish(conn, 'v5.channel.k8s.io', 'kubelet', { kind: 'error', message });
}
