import { PassThrough, type Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { PodLogs } from '../pod-logs.js';
import { readChunks, type TerminalSize, TerminalState, write } from './process-io.js';
import { PseudoTerminal } from './terminal.js';

export interface Attachment {
  stdin: Readable | null;
  stdout: Writable | null;
  stderr: Writable | null;
  /** Called with each terminal size the client sends. */
  onResize?: ((size: TerminalSize) => void) | undefined;
  signal: AbortSignal;
}

interface Attacher {
  stdout: Writable;
}

/**
 * A container's main process, what `kubectl attach` connects to: it echoes what it reads on
 * standard input to standard output (on a terminal when the container has `tty: true`). Its
 * output is the container's log, so what it echoes shows in `kubectl logs`, and lines appended to
 * the log from outside (tests, the demo) reach every attached client as live output.
 */
export class MainProcess {
  private readonly attachers = new Set<Attacher>();
  private readonly input = new PassThrough();
  private readonly terminal: TerminalState | undefined;
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';
  /** Set while this process appends its own output to the log (not to be echoed twice). */
  private logging = false;
  private readonly stopFollowing: () => void;

  constructor(
    private readonly logs: PodLogs,
    private readonly namespace: string,
    private readonly pod: string,
    private readonly container: string,
    readonly opts: { tty: boolean; stdin: boolean },
    signal: AbortSignal,
  ) {
    const output = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        void this.emitOutput(chunk).then(() => cb());
      },
    });
    let source: Readable = this.input;
    if (opts.tty) {
      this.terminal = new TerminalState();
      const pty = new PseudoTerminal(this.terminal, output);
      void pty.feed(this.input).catch(() => {});
      source = pty.input;
      void this.echo(source, pty.output, signal);
    } else void this.echo(source, output, signal);
    this.stopFollowing = logs.follow(namespace, pod, container, (line) => {
      if (!this.logging) void this.broadcast(Buffer.from(`${line.text}${opts.tty ? '\r\n' : '\n'}`));
    });
    signal.addEventListener('abort', () => this.stop(), { once: true });
  }

  /** Connects a client until its signal aborts; its keystrokes feed the process (if it has stdin). */
  async attach(a: Attachment): Promise<void> {
    const attacher: Attacher | undefined = a.stdout ? { stdout: a.stdout } : undefined;
    if (attacher) this.attachers.add(attacher);
    const feeding = a.stdin && this.opts.stdin ? this.feed(a.stdin, a.signal) : Promise.resolve();
    try {
      await new Promise<void>((resolve) => {
        if (a.signal.aborted) resolve();
        else a.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      if (attacher) this.attachers.delete(attacher);
      await feeding;
    }
  }

  resize(size: TerminalSize): void {
    this.terminal?.resize(size);
  }

  attachedCount(): number {
    return this.attachers.size;
  }

  private async feed(stdin: Readable, signal: AbortSignal): Promise<void> {
    try {
      for await (const chunk of readChunks(stdin, signal)) await write(this.input, chunk, signal);
    } catch {
      // The client left or the container stopped; the process keeps its own input open.
    }
  }

  /** The program itself: `cat`. */
  private async echo(source: Readable, sink: Writable, signal: AbortSignal): Promise<void> {
    try {
      for await (const chunk of readChunks(source, signal)) await write(sink, chunk, signal);
    } catch {
      // Stopped with the pod.
    }
  }

  private async emitOutput(chunk: Buffer): Promise<void> {
    this.partial += this.decoder.write(chunk);
    const lines = this.partial.split('\n');
    this.partial = lines.pop() ?? '';
    this.logging = true;
    try {
      for (const line of lines)
        this.logs.append(this.namespace, this.pod, this.container, line.replace(/\r$/, ''));
    } finally {
      this.logging = false;
    }
    await this.broadcast(chunk);
  }

  private async broadcast(chunk: Buffer): Promise<void> {
    // The slowest attached client paces the process, as a terminal would.
    await Promise.allSettled([...this.attachers].map((a) => write(a.stdout, chunk)));
  }

  private stop(): void {
    this.stopFollowing();
    this.input.end();
    this.attachers.clear();
  }
}
