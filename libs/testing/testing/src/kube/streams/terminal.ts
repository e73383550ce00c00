import { PassThrough, type Readable, Transform, type Writable } from 'node:stream';
import { type TerminalState, write } from './process-io.js';

const CTRL_C = 0x03;
const CTRL_D = 0x04;
const BACKSPACE = 0x08;
const CTRL_U = 0x15;
const DEL = 0x7f;

/**
 * A pseudo-terminal in canonical mode between a client and a process, as the container runtime
 * sets one up for `tty: true`: typed bytes are echoed, `\r` becomes `\n`, a line reaches the
 * process when Enter is pressed (with backspace and Ctrl-U editing), Ctrl-C interrupts the
 * foreground process, Ctrl-D at the start of a line is end of input; on output every `\n`
 * becomes `\r\n`.
 */
export class PseudoTerminal {
  /** What the process reads: cooked lines. */
  readonly input = new PassThrough();
  /** Where the process writes (stdout and stderr both). */
  readonly output: Writable;
  private line: number[] = [];

  constructor(
    readonly state: TerminalState,
    rawOut: Writable,
  ) {
    const onlcr = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        cb(null, Buffer.from(chunk.toString('latin1').replace(/\n/g, '\r\n'), 'latin1'));
      },
    });
    onlcr.pipe(rawOut, { end: false });
    this.output = onlcr;
  }

  /** Runs the line discipline over the client's keystrokes until they end. */
  async feed(rawIn: Readable | null): Promise<void> {
    if (rawIn) {
      for await (const chunk of rawIn) {
        for (const byte of chunk as Buffer) {
          // After Ctrl-D the process has seen end of input; later keys go nowhere.
          if (!this.input.writableEnded) await this.key(byte);
        }
      }
    }
    if (this.line.length > 0 && !this.input.writableEnded) await this.deliver();
    this.input.end();
  }

  private async echo(text: string | Buffer): Promise<void> {
    if (this.state.echo) await write(this.output, text);
  }

  private async deliver(): Promise<void> {
    const bytes = Buffer.from(this.line);
    this.line = [];
    await write(this.input, bytes);
  }

  private async key(byte: number): Promise<void> {
    switch (byte) {
      case CTRL_C:
        this.line = [];
        await this.echo('^C\n');
        this.state.interrupt();
        return;
      case CTRL_D:
        if (this.line.length === 0) this.input.end();
        else await this.deliver();
        return;
      case DEL:
      case BACKSPACE:
        if (this.line.length === 0) return;
        // Drop a whole UTF-8 sequence: continuation bytes, then their lead byte.
        while (this.line.length > 0 && (this.line[this.line.length - 1]! & 0xc0) === 0x80) this.line.pop();
        this.line.pop();
        await this.echo('\b \b');
        return;
      case CTRL_U:
        await this.echo('\b \b'.repeat(this.line.length));
        this.line = [];
        return;
      case 0x0d:
      case 0x0a:
        this.line.push(0x0a);
        await this.echo('\n');
        await this.deliver();
        return;
      default:
        this.line.push(byte);
        await this.echo(Buffer.from([byte]));
    }
  }
}
