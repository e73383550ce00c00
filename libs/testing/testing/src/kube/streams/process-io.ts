import { EventEmitter } from 'node:events';
import { type Readable, Writable } from 'node:stream';
import type { PodFilesystem } from './pod-filesystem.js';

/** A terminal size as kubectl sends it on the resize channel. */
export interface TerminalSize {
  width: number;
  height: number;
}

/** The controlling terminal of a process started with a TTY. */
export class TerminalState extends EventEmitter {
  size: TerminalSize | undefined;
  /** `stty echo` / `stty -echo`. */
  echo = true;
  /** The process Ctrl-C interrupts (the shell hands the terminal to each command it runs). */
  foreground: AbortController | undefined;

  resize(size: TerminalSize): void {
    this.size = size;
    this.emit('resize', size);
  }

  /** Ctrl-C typed on the terminal: the foreground process is interrupted. */
  interrupt(): void {
    this.foreground?.abort(new ProcessSignal(EXIT_SIGINT, 'interrupted'));
  }
}

/** What a fake container process runs with. */
export interface ProcessIo {
  stdin: Readable;
  stdout: Writable;
  stderr: Writable;
  env: Map<string, string>;
  /** Working directory (absolute). */
  cwd: string;
  fs: PodFilesystem;
  terminal: TerminalState | undefined;
  /** Aborted when the session ends or the process is interrupted. */
  signal: AbortSignal;
}

/** A command of the fake container: resolves with its exit status. */
export type Program = (args: string[], io: ProcessIo) => Promise<number>;

/** Writing to a reader that went away (the shell's EPIPE/SIGPIPE). */
export class BrokenPipe extends Error {
  constructor() {
    super('broken pipe');
    this.name = 'BrokenPipe';
  }
}

/** Exit status of a process killed by a signal, as shells report it (128 + signal number). */
export const EXIT_SIGINT = 130;
export const EXIT_SIGKILL = 137;
export const EXIT_SIGPIPE = 141;

/** Why a process was stopped from outside: Ctrl-C, the session or the pod going away. */
export class ProcessSignal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ProcessSignal';
  }
}

/** The exit status of a process that ended by throwing `err`, or undefined for a real failure. */
export function signalStatus(err: unknown): number | undefined {
  if (err instanceof ProcessSignal) return err.status;
  if (err instanceof BrokenPipe) return EXIT_SIGPIPE;
  return undefined;
}

/** A controller aborted when `parent` aborts (with the same reason). */
export function childController(parent: AbortSignal): AbortController {
  const child = new AbortController();
  if (parent.aborted) child.abort(parent.reason);
  else parent.addEventListener('abort', () => child.abort(parent.reason), { once: true });
  return child;
}

/**
 * Writes with backpressure: resolves once the stream can take more; rejects with BrokenPipe when
 * the reader is gone, or with the signal's reason when the process is stopped while waiting.
 */
export function write(stream: Writable, chunk: Buffer | string, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (stream.destroyed || stream.writableEnded) return Promise.reject(new BrokenPipe());
  if (stream.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: unknown) => {
      stream.off('drain', onDrain);
      stream.off('close', onClose);
      signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new BrokenPipe());
    const onAbort = () => done(signal?.reason);
    stream.on('drain', onDrain);
    stream.on('close', onClose);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The chunks of a stream until it ends; stops with the signal's reason when aborted, leaving the
 * stream itself open (an interactive shell keeps reading the same input after Ctrl-C).
 */
export async function* readChunks(stream: Readable, signal: AbortSignal): AsyncGenerator<Buffer> {
  for (;;) {
    signal.throwIfAborted();
    const chunk = stream.read() as Buffer | string | null;
    if (chunk !== null) {
      yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      continue;
    }
    if (stream.readableEnded || stream.destroyed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        stream.off('readable', done);
        stream.off('end', done);
        stream.off('close', done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      stream.on('readable', done);
      stream.on('end', done);
      stream.on('close', done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

/** A sink that drops everything (a stream the client did not ask for: /dev/null). */
export function nullSink(): Writable {
  return new Writable({
    write(_chunk, _enc, cb) {
      cb();
    },
  });
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function sleepFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Reads a stream to its end, refusing more than `limit` bytes. */
export async function readAll(stream: Readable, limit: number, signal: AbortSignal): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const buf of readChunks(stream, signal)) {
    size += buf.length;
    if (size > limit) throw new Error(`input larger than ${limit} bytes`);
    parts.push(buf);
  }
  return Buffer.concat(parts);
}
