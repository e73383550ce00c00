// Every command the Markdown files show is parsed by the program it names, so the manual cannot
// drift from the code: `sh` blocks by bash (`bash -n`), `pullplane` commands (blocks and inline
// spans) by the CLI's own commander program with its actions replaced by no-ops, and `kubectl`
// commands against the real kubectl's help for that subcommand (its command path and flags).
// The blocks that create files or Secrets run in install-guide.test.ts (deploy/README.md
// and docs/pki.md).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildProgram } from '@pullplane/app-cli';
import { findBinary } from '@pullplane/testing';
import { type Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without declarations
import { markdownFiles } from '../../scripts/check-links.mjs';
import {
  commandsOf,
  type DocCommand,
  docCommands,
  pullplaneArgs,
  shellBlocks,
} from './support/doc-commands.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const FILES = (markdownFiles as (root: string) => string[])(ROOT);
const where = (c: { file: string; line: number }) => `${c.file}:${c.line}`;

/**
 * Parses a `pullplane` command line with the real program, running nothing. A fragment (prose)
 * may leave out required options and arguments, so for one none is required.
 */
async function parsePullplane(
  args: string[],
  fragment = false,
): Promise<{ code?: string; message?: string }> {
  const errors: string[] = [];
  const program = buildProgram({ out: () => {}, err: (t) => errors.push(t) });
  const stub = (cmd: Command) => {
    if (cmd.commands.length === 0) cmd.action(() => {});
    if (fragment) {
      for (const o of cmd.options) o.mandatory = false;
      for (const a of cmd.registeredArguments) a.required = false;
    }
    for (const sub of cmd.commands) {
      sub.exitOverride();
      sub.configureOutput({ writeOut: () => {}, writeErr: (t) => errors.push(t) });
      stub(sub);
    }
  };
  stub(program);
  try {
    await program.parseAsync(args, { from: 'user' });
    return {};
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return {};
      return { code: err.code, message: errors.join('').trim() || err.message };
    }
    throw err;
  }
}

/** A command group named alone in prose (`pullplane agent`) shows its help: not an error there. */
const FRAGMENT_OK = new Set(['commander.help', 'commander.optionMissingArgument']);

describe('the shell blocks of every Markdown file', () => {
  const blocks = FILES.flatMap((f) => shellBlocks(ROOT, f));

  it('are found', () => {
    expect(blocks.length).toBeGreaterThan(10);
  });

  it('are valid bash', async () => {
    const bash = findBinary('bash', 'install bash');
    const bad: string[] = [];
    for (const b of blocks) {
      try {
        // Placeholders (`<pod>`) are words the reader fills in, not redirections.
        await run(bash, ['-n', '-c', b.text.replace(/<[\w.…-]+>/g, 'PLACEHOLDER')]);
      } catch (err) {
        bad.push(`${where(b)}: ${(err as { stderr?: string }).stderr ?? String(err)}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('pullplane commands in the docs', () => {
  const commands = docCommands(ROOT, FILES, /^(pullplane|npx pullplane|npm run cli)\s/);

  it('are found, in blocks and in prose', () => {
    expect(commands.filter((c) => c.from === 'block').length).toBeGreaterThan(10);
    expect(commands.filter((c) => c.from === 'span').length).toBeGreaterThan(10);
  });

  it('parse with the CLI: blocks completely, prose fragments without unknown commands, options or values', async () => {
    const bad: string[] = [];
    for (const c of commands) {
      const args = pullplaneArgs(c.words) ?? [];
      // `npm run cli -- <command>`, `npx pullplane …`: a placeholder for any command.
      if (c.from === 'span' && (args.length === 0 || /^(<|…)/.test(args[0]!))) continue;
      const result = await parsePullplane(args, c.from === 'span');
      if (result.code === undefined) continue;
      if (c.from === 'span' && FRAGMENT_OK.has(result.code)) continue;
      bad.push(`${where(c)}: \`${c.words.join(' ')}\`: ${result.message}`);
    }
    expect(bad).toEqual([]);
  });

  it('the parser refuses what the CLI refuses (the check has teeth)', async () => {
    expect(
      (await parsePullplane(['kubeconfig', '--server', 'https://p:9090', '--agent', 'east', '-o', 'kc']))
        .code,
    ).toBe('commander.unknownOption');
    // In prose, a missing --ca-dir is fine but an unknown option is not.
    expect(
      (await parsePullplane(['cert', 'create', 'x', '--kind', 'caller', '--name', 'y'], true)).code,
    ).toBe('commander.unknownOption');
    expect(await parsePullplane(['cert', 'create', '--kind', 'caller'], true)).toEqual({});
    expect((await parsePullplane(['cert', 'create', 'x', '--kind', 'nope', '--ca-dir', 'p'])).code).toBe(
      'commander.invalidArgument',
    );
    expect((await parsePullplane(['ca', 'init'])).code).toBe('commander.missingMandatoryOptionValue');
    expect((await parsePullplane(['nosuch'])).code).toBe('commander.unknownCommand');
    expect(await parsePullplane(['ca', 'init', '--dir', './pki'])).toEqual({});
  });
});

/** kubectl's flags for a command path, from its help; the global ones from `kubectl options`. */
const helpCache = new Map<string, Promise<{ usage: string; flags: Set<string> } | undefined>>();
function kubectlHelp(pathWords: string[]) {
  const key = pathWords.join(' ');
  let found = helpCache.get(key);
  if (!found) {
    found = (async () => {
      const kubectl = findBinary('kubectl', 'install kubectl');
      try {
        const { stdout } = await run(kubectl, pathWords.length ? [...pathWords, '--help'] : ['options']);
        const usage = /Usage:\s*\n\s*(.*)/.exec(stdout)?.[1] ?? '';
        const flags = new Set(
          [...stdout.matchAll(/(?:^|\s)(--?[a-zA-Z][\w-]*)(?=[=,:\s])/gm)].map((m) => m[1]!),
        );
        return { usage, flags };
      } catch {
        return undefined;
      }
    })();
    helpCache.set(key, found);
  }
  return found;
}

/** kubectl's global flags that take a value (the next word when written without `=`): not `=true|false`. */
let valueFlags: Promise<Set<string>> | undefined;
function globalValueFlags(): Promise<Set<string>> {
  valueFlags ??= (async () => {
    const { stdout } = await run(findBinary('kubectl', 'install kubectl'), ['options']);
    const out = new Set<string>();
    for (const m of stdout.matchAll(/^\s*(?:(-\w), )?(--[\w-]+)=(.*):$/gm))
      if (!/^(true|false)$/.test(m[3]!)) for (const f of [m[1], m[2]]) if (f) out.add(f);
    return out;
  })();
  return valueFlags;
}

async function checkKubectl(c: DocCommand): Promise<string | undefined> {
  const args = c.words.slice(1);
  const positional: string[] = [];
  const takesValue = await globalValueFlags();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('-')) {
      if (takesValue.has(a)) i++;
    } else positional.push(a);
  }
  // The command path: words kubectl's usage line names as its command.
  const cmd: string[] = [];
  for (const w of positional) {
    if (!/^[a-z][a-z-]*$/.test(w)) break;
    const help = await kubectlHelp([...cmd, w]);
    if (!help?.usage.startsWith(`kubectl ${[...cmd, w].join(' ')}`)) break;
    cmd.push(w);
  }
  if (cmd.length === 0) return `no kubectl command in \`${c.words.join(' ')}\``;
  const own = (await kubectlHelp(cmd))!.flags;
  const global = (await kubectlHelp([]))!.flags;
  const unknown = args
    .filter((a) => a.startsWith('-') && a !== '-' && a !== '--')
    .map((a) => a.split('=')[0]!)
    .filter((f) => !own.has(f) && !global.has(f));
  return unknown.length
    ? `\`${c.words.join(' ')}\`: kubectl ${cmd.join(' ')} has no ${unknown.join(', ')}`
    : undefined;
}

describe('kubectl commands in the docs', () => {
  const commands = docCommands(ROOT, FILES, /^kubectl\s/).filter((c) => c.from === 'block');

  it('are found', () => {
    expect(commands.length).toBeGreaterThan(10);
  });

  it("name a kubectl command and only that command's flags", async () => {
    const bad: string[] = [];
    for (const c of commands) {
      const problem = await checkKubectl(c);
      if (problem) bad.push(`${where(c)}: ${problem}`);
    }
    expect(bad).toEqual([]);
  }, 120_000);

  it("apply this repository's bundles where they name one (`-k deploy/…`, `kustomize deploy/…`)", () => {
    const bad: string[] = [];
    let checked = 0;
    for (const c of commands) {
      const dirs = c.words.flatMap((w, i) =>
        (c.words[i - 1] === '-k' || c.words[i - 1] === 'kustomize') && w.startsWith('deploy/') ? [w] : [],
      );
      for (const d of dirs) {
        checked++;
        if (!existsSync(path.join(ROOT, d, 'kustomization.yaml')))
          bad.push(`${where(c)}: ${d} is no kustomization`);
      }
    }
    expect(checked).toBeGreaterThan(3);
    expect(bad).toEqual([]);
  });

  it('the check has teeth', async () => {
    const [words] = commandsOf('kubectl -n argocd get pods --no-such-flag');
    expect(await checkKubectl({ file: 'x', line: 1, words: words!, from: 'block' })).toMatch(
      /--no-such-flag/,
    );
    const [bogus] = commandsOf('kubectl frobnicate pods');
    expect(await checkKubectl({ file: 'x', line: 1, words: bogus!, from: 'block' })).toMatch(
      /no kubectl command/,
    );
    const [redirected] = commandsOf('pullplane agent create east --ca-dir ./pki > east.yaml 2>&1');
    expect(redirected).toEqual(['pullplane', 'agent', 'create', 'east', '--ca-dir', './pki']);
    const [ok] = commandsOf(
      'kubectl create secret generic a -n argocd --from-file=ca.crt=x --dry-run=client -o yaml | kubectl apply -n argocd -f -',
    );
    expect(await checkKubectl({ file: 'x', line: 1, words: ok!, from: 'block' })).toBeUndefined();
  });
});
