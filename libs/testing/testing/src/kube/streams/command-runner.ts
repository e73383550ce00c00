import { randomBytes } from 'node:crypto';
import { Readable, type Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { CommandOutcome } from './command-status.js';
import type { ContainerRuntime } from './pod-runtime.js';
import {
  childController,
  nullSink,
  type ProcessIo,
  signalStatus,
  type TerminalSize,
  TerminalState,
} from './process-io.js';
import { findProgram } from './programs.js';
import type { StreamSession } from './stream-sessions.js';
import { PseudoTerminal } from './terminal.js';

/** The client's side of an exec or attach, whatever the transport. */
export interface CommandChannels {
  stdin: Readable | null;
  stdout: Writable | null;
  stderr: Writable | null;
  /** JSON terminal sizes, one after another, as kubectl's resize stream sends them. */
  resize: Readable | null;
  tty: boolean;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

const MAX_RESIZE_BUFFER = 64 * 1024;

/** Reads the resize stream's concatenated JSON objects (Go's json.Decoder accepts them so). */
export async function readResizes(stream: Readable, onSize: (size: TerminalSize) => void): Promise<void> {
  let text = '';
  try {
    for await (const chunk of stream) {
      text += (chunk as Buffer).toString('utf8');
      if (text.length > MAX_RESIZE_BUFFER) return;
      for (;;) {
        const start = text.search(/\S/);
        if (start < 0) {
          text = '';
          break;
        }
        const end = objectEnd(text, start);
        if (end < 0) break;
        const value = JSON.parse(text.slice(start, end)) as { Width?: unknown; Height?: unknown };
        text = text.slice(end);
        if (typeof value.Width === 'number' && typeof value.Height === 'number') {
          onSize({ width: value.Width, height: value.Height });
        }
      }
    }
  } catch {
    // A malformed size ends resize handling, as the decoder loop in the kubelet does.
  }
}

/** The index after the JSON object starting at `start`, or -1 when it is not complete yet. */
function objectEnd(text: string, start: number): number {
  if (text[start] !== '{') throw new SyntaxError('terminal size is not a JSON object');
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return -1;
}

/** Ends an output and waits until what was written has been handed on (or the client left). */
async function close(stream: Writable | null): Promise<void> {
  if (!stream || stream.destroyed) return;
  stream.end();
  await finished(stream, { readable: false }).catch(() => {});
}

/** Runs `argv` in the container the way the kubelet's exec does; resolves with how it ended. */
export async function runExec(
  container: ContainerRuntime,
  argv: readonly string[],
  ch: CommandChannels,
  session: StreamSession,
): Promise<CommandOutcome> {
  const program = argv.length > 0 ? findProgram(argv[0]!) : undefined;
  if (!program) {
    const execId = randomBytes(32).toString('hex');
    return {
      kind: 'error',
      message: `error executing command in container: failed to exec in container: failed to start exec "${execId}": OCI runtime exec failed: exec failed: unable to start container process: exec: "${argv[0] ?? ''}": executable file not found in $PATH: unknown`,
    };
  }
  const controller = childController(AbortSignal.any([ch.signal, container.signal]));
  let terminal: TerminalState | undefined;
  let pty: PseudoTerminal | undefined;
  let feeding: Promise<void> = Promise.resolve();
  const io: ProcessIo = {
    stdin: ch.stdin ?? Readable.from([]),
    stdout: ch.stdout ?? nullSink(),
    stderr: ch.stderr ?? nullSink(),
    env: container.env(ch.tty),
    cwd: '/',
    fs: container.fs,
    terminal: undefined,
    signal: controller.signal,
  };
  if (ch.tty) {
    terminal = new TerminalState();
    terminal.foreground = controller;
    pty = new PseudoTerminal(terminal, ch.stdout ?? nullSink());
    feeding = pty.feed(ch.stdin).catch(() => {});
    io.stdin = pty.input;
    io.stdout = pty.output;
    io.stderr = pty.output;
    io.terminal = terminal;
  }
  const resizing = ch.resize
    ? readResizes(ch.resize, (size) => {
        session.resizes.push(size);
        terminal?.resize(size);
      })
    : Promise.resolve();
  let code: number;
  try {
    code = await program(argv.slice(1), io);
  } catch (err) {
    const status = signalStatus(controller.signal.reason ?? err) ?? signalStatus(err);
    if (status === undefined) throw err;
    code = status;
  }
  if (pty) await close(pty.output);
  await Promise.all([close(ch.stdout), close(ch.stderr)]);
  controller.abort();
  void feeding;
  void resizing;
  session.exitCode = code;
  return { kind: 'exit', code, command: argv };
}

/** Attaches to the container's main process until the client leaves or the pod goes. */
export async function runAttach(
  container: ContainerRuntime,
  ch: CommandChannels,
  session: StreamSession,
): Promise<CommandOutcome> {
  const main = container.mainProcess();
  const signal = AbortSignal.any([ch.signal, container.signal]);
  const resizing = ch.resize
    ? readResizes(ch.resize, (size) => {
        session.resizes.push(size);
        main.resize(size);
      })
    : Promise.resolve();
  await main.attach({ stdin: ch.stdin, stdout: ch.stdout, stderr: ch.stderr, signal });
  await Promise.all([close(ch.stdout), close(ch.stderr)]);
  void resizing;
  return { kind: 'exit', code: 0, command: [] };
}
