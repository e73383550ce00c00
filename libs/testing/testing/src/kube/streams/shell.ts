import { PassThrough, Readable, Writable } from 'node:stream';
import { type FileWriter, FsError, resolvePath } from './pod-filesystem.js';
import {
  childController,
  nullSink,
  type ProcessIo,
  type Program,
  readChunks,
  signalStatus,
  write,
} from './process-io.js';
import {
  type Pipeline,
  parseScript,
  type Redirect,
  type Script,
  ShellSyntaxError,
  type SimpleCommand,
  type Word,
} from './shell-parser.js';

/** Finds a program by the name a command line uses (`ls`, `/bin/ls`); undefined when none. */
export type ProgramLookup = (name: string) => Program | undefined;

/** `exit` unwinds the shell with this. */
class ExitShell {
  constructor(readonly code: number) {}
}

interface Fds {
  0: Readable;
  1: Writable;
  2: Writable;
}

const BIN_DIRS = ['/bin', '/sbin', '/usr/bin', '/usr/sbin', '/usr/local/bin', '/usr/local/sbin'];

/** The program a command name stands for: a bare name, or a path in one of the usual bin dirs. */
export function programName(name: string): string | undefined {
  if (!name.includes('/')) return name;
  const slash = name.lastIndexOf('/');
  return BIN_DIRS.includes(name.slice(0, slash)) ? name.slice(slash + 1) : undefined;
}

/**
 * The interpreter of the fake `sh` (see shell-parser.ts for the language): runs scripts from
 * `-c`, a file, or standard input (interactively with a prompt when on a terminal).
 */
export class Shell {
  status = 0;
  private readonly vars: Map<string, string>;
  private cwd: string;

  constructor(
    private readonly io: ProcessIo,
    private readonly lookup: ProgramLookup,
    private readonly positional: string[],
  ) {
    this.vars = new Map(io.env);
    this.cwd = io.cwd;
  }

  /** Runs a whole script; resolves with the shell's exit status. */
  async runScript(text: string): Promise<number> {
    let script: Script;
    try {
      script = parseScript(text);
    } catch (err) {
      if (!(err instanceof ShellSyntaxError)) throw err;
      await write(this.io.stderr, `sh: syntax error: ${err.message}\n`, this.io.signal);
      return 2;
    }
    try {
      await this.runList(script);
      return this.status;
    } catch (err) {
      if (err instanceof ExitShell) return err.code;
      throw err;
    }
  }

  /** Reads commands line by line from standard input; a prompt on a terminal. */
  async interactive(): Promise<number> {
    const prompt = async () => {
      if (this.io.terminal) await write(this.io.stdout, `${this.cwd} # `, this.io.signal);
    };
    // An interactive shell survives Ctrl-C: only the command it runs is interrupted.
    if (this.io.terminal) this.io.terminal.foreground = undefined;
    let pending = '';
    await prompt();
    for await (const chunk of readChunks(this.io.stdin, this.io.signal)) {
      pending += chunk.toString('utf8');
      for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        const code = await this.runLine(line);
        if (code !== undefined) return code;
        await prompt();
      }
    }
    if (pending.trim() !== '') {
      const code = await this.runLine(pending);
      if (code !== undefined) return code;
    }
    if (this.io.terminal) await write(this.io.stdout, 'exit\n', this.io.signal).catch(() => {});
    return this.status;
  }

  private async runLine(line: string): Promise<number | undefined> {
    let script: Script;
    try {
      script = parseScript(line);
    } catch (err) {
      if (!(err instanceof ShellSyntaxError)) throw err;
      await write(this.io.stderr, `sh: syntax error: ${err.message}\n`, this.io.signal);
      this.status = 2;
      return undefined;
    }
    try {
      await this.runList(script);
    } catch (err) {
      if (err instanceof ExitShell) return err.code;
      throw err;
    }
    return undefined;
  }

  private async runList(script: Script): Promise<void> {
    for (const andOr of script) {
      await this.runPipeline(andOr.first);
      for (const { op, pipeline } of andOr.rest) {
        if ((op === '&&') === (this.status === 0)) await this.runPipeline(pipeline);
      }
    }
  }

  private async runPipeline(p: Pipeline): Promise<void> {
    const base: Fds = { 0: this.io.stdin, 1: this.io.stdout, 2: this.io.stderr };
    let status: number;
    if (p.commands.length === 1) status = await this.runCommand(p.commands[0]!, base);
    else {
      const pipes = p.commands.slice(1).map(() => new PassThrough());
      const runs = p.commands.map(async (cmd, i) => {
        const fds: Fds = { 0: i === 0 ? base[0] : pipes[i - 1]!, 1: pipes[i] ?? base[1], 2: base[2] };
        try {
          return await this.runCommand(cmd, fds);
        } finally {
          pipes[i]?.end();
          // The reader is done: a writer still feeding it gets a broken pipe.
          if (i > 0) pipes[i - 1]!.destroy();
        }
      });
      const statuses = await Promise.all(runs);
      status = statuses[statuses.length - 1]!;
    }
    this.status = p.negate ? (status === 0 ? 1 : 0) : status;
  }

  private expand(word: Word): string | undefined {
    let out = '';
    let onlyUnquotedVars = true;
    for (const part of word.parts) {
      if (part.kind === 'lit') {
        out += part.text;
        onlyUnquotedVars = false;
      } else {
        out += this.variable(part.name);
        if (part.quoted) onlyUnquotedVars = false;
      }
    }
    // An unquoted expansion to nothing is no word at all, as in sh.
    return out === '' && onlyUnquotedVars && word.parts.length > 0 ? undefined : out;
  }

  private variable(name: string): string {
    if (name === '?') return String(this.status);
    if (name === '#') return String(Math.max(0, this.positional.length - 1));
    if (name === '@' || name === '*') return this.positional.slice(1).join(' ');
    if (/^[0-9]$/.test(name)) return this.positional[Number(name)] ?? '';
    return this.vars.get(name) ?? '';
  }

  private async runCommand(cmd: SimpleCommand, inherited: Fds): Promise<number> {
    const signal = this.io.signal;
    const argv = cmd.words.map((w) => this.expand(w)).filter((w): w is string => w !== undefined);
    const assigned = cmd.assignments.map(({ name, value }) => [name, this.expand(value) ?? ''] as const);
    if (argv.length === 0) {
      for (const [k, v] of assigned) this.vars.set(k, v);
    }
    const fds: Fds = { ...inherited };
    const opened: Writable[] = [];
    try {
      for (const r of cmd.redirects) this.redirect(r, fds, opened);
    } catch (err) {
      if (!(err instanceof RedirectError)) throw err;
      await write(fds[2], `sh: ${err.message}\n`, signal);
      return 2;
    }
    try {
      if (argv.length === 0) return 0;
      const builtin = await this.builtin(argv, fds);
      if (builtin !== undefined) return builtin;
      const name = programName(argv[0]!);
      const program = name === undefined ? undefined : this.lookup(name);
      if (!program) {
        const path = resolvePath(this.cwd, argv[0]!);
        const exists = argv[0]!.includes('/') && this.io.fs.lstat(path) !== undefined;
        await write(fds[2], `sh: ${argv[0]}: ${exists ? 'Permission denied' : 'not found'}\n`, signal);
        return exists ? 126 : 127;
      }
      const env = new Map([...this.vars, ...assigned]);
      const child = childController(signal);
      const terminal = this.io.terminal;
      const previous = terminal?.foreground;
      if (terminal) terminal.foreground = child;
      try {
        return await program(argv.slice(1), {
          ...this.io,
          stdin: fds[0],
          stdout: fds[1],
          stderr: fds[2],
          env,
          cwd: this.cwd,
          signal: child.signal,
        });
      } catch (err) {
        const status = signalStatus(err);
        if (status === undefined || signal.aborted) throw err;
        return status;
      } finally {
        if (terminal) terminal.foreground = previous;
      }
    } finally {
      for (const w of opened) w.end();
    }
  }

  private redirect(r: Redirect, fds: Fds, opened: Writable[]): void {
    if (r.fd > 2) throw new RedirectError(`${r.fd}: bad file descriptor`);
    const fd = r.fd as 0 | 1 | 2;
    if (r.op === '>&') {
      const from = r.target as number;
      if (from < 1 || from > 2 || fd === 0) throw new RedirectError(`${from}: bad file descriptor`);
      fds[fd] = fds[from as 1 | 2];
      return;
    }
    const name = this.expand(r.target as Word) ?? '';
    if (r.op === '<') {
      if (fd !== 0) throw new RedirectError(`${fd}: bad file descriptor`);
      if (name === '/dev/null') {
        fds[0] = Readable.from([]);
        return;
      }
      try {
        fds[0] = Readable.from([this.io.fs.readFile(resolvePath(this.cwd, name))]);
      } catch (err) {
        if (err instanceof FsError)
          throw new RedirectError(`can't open ${name}: ${err.message.toLowerCase()}`);
        throw err;
      }
      return;
    }
    if (fd === 0) throw new RedirectError('0: bad file descriptor');
    if (name === '/dev/null') {
      fds[fd] = nullSink();
      return;
    }
    if (name === '/dev/stdout' || name === '/dev/stderr') {
      fds[fd] = name === '/dev/stdout' ? fds[1] : fds[2];
      return;
    }
    let writer: FileWriter;
    try {
      writer = this.io.fs.openWrite(resolvePath(this.cwd, name), { append: r.op === '>>' });
    } catch (err) {
      if (err instanceof FsError)
        throw new RedirectError(`can't create ${name}: ${err.message.toLowerCase()}`);
      throw err;
    }
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        try {
          writer.append(chunk);
          cb();
        } catch (err) {
          cb(err as Error);
        }
      },
    });
    stream.on('error', () => {
      // The writing program sees a broken pipe and reports it; the file keeps what fit.
    });
    opened.push(stream);
    fds[fd] = stream;
  }

  /** Built-ins that change the shell itself; undefined when argv is not one. */
  private async builtin(argv: string[], fds: Fds): Promise<number | undefined> {
    const [name, ...args] = argv;
    switch (name) {
      case 'exit':
        throw new ExitShell(args[0] === undefined ? this.status : Number(args[0]) & 0xff);
      case 'cd': {
        const target = resolvePath(this.cwd, args[0] ?? this.vars.get('HOME') ?? '/');
        const node = this.io.fs.lstat(target);
        if (node?.kind !== 'dir') {
          await write(fds[2], `sh: cd: can't cd to ${args[0]}: No such file or directory\n`, this.io.signal);
          return 2;
        }
        this.cwd = target;
        this.vars.set('PWD', target);
        return 0;
      }
      case 'export':
        for (const a of args) {
          const eq = a.indexOf('=');
          if (eq > 0) this.vars.set(a.slice(0, eq), a.slice(eq + 1));
        }
        return 0;
      case 'unset':
        for (const a of args) this.vars.delete(a);
        return 0;
      case ':':
        return 0;
      case 'exec': {
        if (args.length === 0) return 0;
        const code = await this.runCommand(
          {
            assignments: [],
            words: args.map((a) => ({ parts: [{ kind: 'lit', text: a, quoted: true }] })),
            redirects: [],
          },
          fds,
        );
        throw new ExitShell(code);
      }
      default:
        return undefined;
    }
  }
}

class RedirectError extends Error {}

/** `sh -c SCRIPT [NAME [ARGS…]]`, `sh FILE [ARGS…]`, or `sh` reading standard input. */
export function shProgram(lookup: ProgramLookup): Program {
  return async (args, io) => {
    if (args[0] === '-c') {
      if (args[1] === undefined) {
        await write(io.stderr, 'sh: -c requires an argument\n', io.signal);
        return 2;
      }
      return new Shell(io, lookup, [args[2] ?? 'sh', ...args.slice(3)]).runScript(args[1]);
    }
    if (args[0] !== undefined && args[0] !== '-' && args[0] !== '-i') {
      let text: string;
      try {
        text = io.fs.readFile(resolvePath(io.cwd, args[0])).toString('utf8');
      } catch (err) {
        if (!(err instanceof FsError)) throw err;
        await write(io.stderr, `sh: can't open '${args[0]}': ${err.message}\n`, io.signal);
        return 2;
      }
      return new Shell(io, lookup, args).runScript(text);
    }
    return new Shell(io, lookup, ['sh']).interactive();
  };
}
