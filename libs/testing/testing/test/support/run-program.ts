import { PassThrough, Readable, Writable } from 'node:stream';
import { newContainerFilesystem, type PodFilesystem } from '../../src/kube/streams/pod-filesystem.js';
import { signalStatus, type TerminalState } from '../../src/kube/streams/process-io.js';
import { findProgram } from '../../src/kube/streams/programs.js';

export interface ProgramResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

function collector(into: Buffer[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      into.push(Buffer.from(chunk));
      cb();
    },
  });
}

/** Runs one fake-container command to completion with the given input. */
export async function runProgram(
  argv: string[],
  opts: {
    stdin?: Buffer | string | Readable;
    fs?: PodFilesystem;
    cwd?: string;
    env?: Record<string, string>;
    terminal?: TerminalState;
    signal?: AbortSignal;
  } = {},
): Promise<ProgramResult> {
  const program = findProgram(argv[0]!);
  if (!program) throw new Error(`no program ${argv[0]}`);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let stdin: Readable;
  if (opts.stdin instanceof Readable) stdin = opts.stdin;
  else {
    const pass = new PassThrough();
    pass.end(opts.stdin ?? '');
    stdin = pass;
  }
  let code: number;
  try {
    code = await program(argv.slice(1), {
      stdin,
      stdout: collector(out),
      stderr: collector(err),
      env: new Map(Object.entries(opts.env ?? { HOME: '/root', HOSTNAME: 'test-pod' })),
      cwd: opts.cwd ?? '/',
      fs: opts.fs ?? newContainerFilesystem('test-pod'),
      terminal: opts.terminal,
      signal: opts.signal ?? new AbortController().signal,
    });
  } catch (e) {
    const status = signalStatus(e);
    if (status === undefined) throw e;
    code = status;
  }
  return { code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') };
}
