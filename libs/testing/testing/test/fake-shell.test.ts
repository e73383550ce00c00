import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { newContainerFilesystem } from '../src/kube/streams/pod-filesystem.js';
import { ProcessSignal, TerminalState } from '../src/kube/streams/process-io.js';
import { parseScript, ShellSyntaxError } from '../src/kube/streams/shell-parser.js';
import { PseudoTerminal } from '../src/kube/streams/terminal.js';
import { runProgram } from './support/run-program.js';

const sh = (script: string, opts: Parameters<typeof runProgram>[1] = {}) =>
  runProgram(['sh', '-c', script], opts);
const out = async (script: string) => (await sh(script)).stdout.toString();

describe('fake sh: parsing', () => {
  it('splits lists, and-or chains, pipelines and redirections', () => {
    const script = parseScript(`A=1 echo "x $A" 'y' >out 2>&1 | cat && false || ! true; exit 3`);
    expect(script).toHaveLength(2);
    const [first] = script;
    expect(first!.first.commands).toHaveLength(2);
    expect(first!.rest.map((r) => r.op)).toEqual(['&&', '||']);
    expect(first!.rest[1]!.pipeline.negate).toBe(true);
    expect(first!.first.commands[0]!.assignments.map((a) => a.name)).toEqual(['A']);
    expect(first!.first.commands[0]!.redirects).toEqual([
      { fd: 1, op: '>', target: { parts: [{ kind: 'lit', text: 'out', quoted: false }] } },
      { fd: 2, op: '>&', target: 1 },
    ]);
  });

  it.each([
    ['echo "open', /unterminated quoted string/],
    ['echo $(id)', /command substitution is not supported/],
    ['echo `id`', /command substitution is not supported/],
    ['sleep 1 &', /background jobs/],
    ['if true; then echo; fi', /control flow/],
    ['echo hi |', /unexpected end of input/],
    ['echo >', /missing file name after >/],
    [`echo \${1x}`, /bad substitution/],
  ])('refuses %s', (script, message) => {
    expect(() => parseScript(script)).toThrow(ShellSyntaxError);
    expect(() => parseScript(script)).toThrow(message);
  });
});

describe('fake sh: running', () => {
  it('exit codes, $?, && and ||, ! and exit', async () => {
    expect((await sh('exit 3')).code).toBe(3);
    expect((await sh('exit 300')).code).toBe(44);
    expect(await out('false; echo $?; true && echo yes; false || echo no; ! false && echo negated')).toBe(
      '1\nyes\nno\nnegated\n',
    );
    expect((await sh('false')).code).toBe(1);
  });

  it('quoting, variables, positional parameters and assignments', async () => {
    const r = await sh(`X='a b'; echo "[$X]" '[$X]' \\$X "\${HOME}" $0 $1 $#`, {});
    // An unquoted expansion to nothing ($1 here) is no word at all.
    expect(r.stdout.toString()).toBe('[a b] [$X] $X /root sh 0\n');
    const args = await runProgram(['sh', '-c', 'echo $0:$1:$2 "$@"', 'name', 'one', 'two']);
    expect(args.stdout.toString()).toBe('name:one:two one two\n');
    expect(await out('Y=2 env | tail -n 1; echo "[$Y]"; export Z=3; echo $Z')).toBe('Y=2\n[]\n3\n');
  });

  it('stderr, redirections into the pod filesystem, and /dev/null', async () => {
    const fs = newContainerFilesystem('p');
    const r = await sh(
      'echo out; echo err >&2; echo saved > /tmp/f; echo more >> /tmp/f; ls /nope 2>/dev/null; cat < /tmp/f',
      {
        fs,
      },
    );
    expect(r.stdout.toString()).toBe('out\nsaved\nmore\n');
    expect(r.stderr).toBe('err\n');
    expect(fs.readFile('/tmp/f').toString()).toBe('saved\nmore\n');
    const bad = await sh('echo x > /missing/dir/f', { fs });
    expect(bad).toMatchObject({
      code: 2,
      stderr: "sh: can't create /missing/dir/f: no such file or directory\n",
    });
    expect((await sh('cat < /none', { fs })).stderr).toBe(
      "sh: can't open /none: no such file or directory\n",
    );
  });

  it('pipelines stream, and a reader that stops early breaks the writer’s pipe', async () => {
    expect(await out('seq 1 5 | tail -n 2')).toBe('4\n5\n');
    expect(await out('echo hello | cat | wc -c')).toBe('6\n');
    const r = await sh('cat /dev/zero | head -c 100000 | wc -c');
    expect(r.stdout.toString()).toBe('100000\n');
    expect(r.code).toBe(0);
  });

  it('unknown commands exit 127 (sh) as busybox words it', async () => {
    expect(await sh('nosuch arg')).toMatchObject({ code: 127, stderr: 'sh: nosuch: not found\n' });
    expect(await sh('/usr/bin/echo via path')).toMatchObject({ code: 0 });
    expect((await sh('/opt/tool')).code).toBe(127);
  });

  it('cd, pwd, test and [ ]', async () => {
    expect(await out('cd /tmp; pwd; cd /nope || echo failed')).toBe('/tmp\nfailed\n');
    expect(
      await out(
        '[ -d /tmp ] && echo dir; test -f /etc/hostname && echo file; [ 2 -lt 10 ] && echo lt; [ a = b ] || echo ne',
      ),
    ).toBe('dir\nfile\nlt\nne\n');
    expect((await sh('test -d /nope')).code).toBe(1);
    expect((await sh('[ -d /tmp')).code).toBe(2);
  });

  it('a script from the filesystem and from standard input', async () => {
    const fs = newContainerFilesystem('p');
    fs.writeFile('/s.sh', 'echo from file $1\nexit 4\n');
    expect(await runProgram(['sh', '/s.sh', 'arg'], { fs })).toMatchObject({ code: 4 });
    const piped = await runProgram(['sh'], { stdin: 'echo one\necho two\nexit 5\necho never\n' });
    expect(piped.stdout.toString()).toBe('one\ntwo\n');
    expect(piped.code).toBe(5);
  });

  it('syntax errors exit 2 with a message', async () => {
    expect(await sh('echo "x')).toMatchObject({
      code: 2,
      stderr: 'sh: syntax error: unterminated quoted string\n',
    });
  });
});

describe('fake commands', () => {
  it('echo and printf', async () => {
    expect((await runProgram(['echo', '-n', 'a', 'b'])).stdout.toString()).toBe('a b');
    expect((await runProgram(['echo', '-e', 'a\\tb\\c', 'x'])).stdout.toString()).toBe('a\tb');
    expect((await runProgram(['printf', '%s=%d\\n', 'a', '1', 'b', '2'])).stdout.toString()).toBe(
      'a=1\nb=2\n',
    );
  });

  it('head, tail (+N streams, as kubectl cp resumes), wc, seq', async () => {
    const text = 'l1\nl2\nl3\nl4\n';
    expect((await runProgram(['head', '-n', '2'], { stdin: text })).stdout.toString()).toBe('l1\nl2\n');
    expect((await runProgram(['head', '-c', '4'], { stdin: text })).stdout.toString()).toBe('l1\nl');
    expect((await runProgram(['tail', '-n', '1'], { stdin: text })).stdout.toString()).toBe('l4\n');
    expect((await runProgram(['tail', '-c+4'], { stdin: text })).stdout.toString()).toBe('l2\nl3\nl4\n');
    expect((await runProgram(['wc', '-l'], { stdin: text })).stdout.toString()).toBe('4\n');
    expect((await runProgram(['seq', '3'])).stdout.toString()).toBe('1\n2\n3\n');
    expect((await runProgram(['sleep', 'x'])).stderr).toBe("sleep: invalid number 'x'\n");
  });

  it('ls, mkdir -p, rm -r, touch', async () => {
    const fs = newContainerFilesystem('p');
    const r = await sh('mkdir -p /a/b/c && touch /a/b/f && ls /a/b && rm /a || rm -r /a && ls /a', { fs });
    expect(r.stdout.toString()).toBe('c\nf\n');
    expect(r.stderr).toBe("rm: '/a' is a directory\nls: /a: No such file or directory\n");
    expect((await runProgram(['ls', '-l', '/etc'], { fs })).stdout.toString()).toMatch(
      /^-rw-r--r-- .* hostname\n/,
    );
  });

  it('sleep stops when the process is killed', async () => {
    const stop = new AbortController();
    const run = runProgram(['sleep', '3600'], { signal: stop.signal });
    stop.abort(new ProcessSignal(137, 'killed'));
    expect((await run).code).toBe(137);
  });
});

describe('fake terminal', () => {
  function terminal() {
    const state = new TerminalState();
    const chunks: Buffer[] = [];
    const raw = new Writable({
      write(c: Buffer, _e, cb) {
        chunks.push(Buffer.from(c));
        cb();
      },
    });
    const pty = new PseudoTerminal(state, raw);
    return { state, pty, shown: () => Buffer.concat(chunks).toString('latin1') };
  }

  it('echoes keys, edits the line, hands whole lines over and turns \\n into \\r\\n', async () => {
    const { pty, shown } = terminal();
    const keys = new PassThrough();
    const lines: string[] = [];
    pty.input.on('data', (d: Buffer) => lines.push(d.toString()));
    const feeding = pty.feed(keys);
    keys.end('ab\x7fc\rxyz\x15q\n');
    await feeding;
    expect(lines.join('')).toBe('ac\nq\n');
    await new Promise<void>((resolve) => pty.output.write('out\n', () => resolve()));
    expect(shown()).toBe('ab\b \bc\r\nxyz\b \b\b \b\b \bq\r\nout\r\n');
  });

  it('Ctrl-C interrupts the foreground process; Ctrl-D at line start ends input; stty size reports resizes', async () => {
    const { state, pty } = terminal();
    const foreground = new AbortController();
    state.foreground = foreground;
    const keys = new PassThrough();
    const feeding = pty.feed(keys);
    keys.write('abc\x03');
    await new Promise((r) => setImmediate(r));
    expect(foreground.signal.aborted).toBe(true);
    state.resize({ width: 132, height: 43 });
    const size = await runProgram(['stty', 'size'], { terminal: state });
    expect(size.stdout.toString()).toBe('43 132\n');
    keys.end('\x04');
    await feeding;
    expect(pty.input.writableEnded).toBe(true);
    expect((await runProgram(['stty', 'size'])).stderr).toBe('stty: standard input: Not a tty\n');
  });
});
