import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../src/index.js';
import { newContainerFilesystem, PodFilesystem } from '../src/kube/streams/pod-filesystem.js';
import { TarFormatError } from '../src/kube/streams/tar-format.js';
import { TarReader } from '../src/kube/streams/tar-reader.js';
import { chunkings, int, prng, randomBuffer, randomChunks } from './support/chunking.js';
import { runProgram } from './support/run-program.js';

const LONG_DIR = 'd'.repeat(120);
const LONG_FILE = `${'f'.repeat(110)}.txt`;
const BINARY = randomBuffer(prng(7), 70_000);

/** A local tree with what kubectl cp meets: nesting, names over 100 bytes, empty and binary files. */
function localTree(): string {
  const root = join(makeTempDir('tar-tree-'), 'tree');
  mkdirSync(join(root, 'sub', LONG_DIR), { recursive: true });
  writeFileSync(join(root, 'hello.txt'), 'hello\n');
  writeFileSync(join(root, 'empty'), '');
  writeFileSync(join(root, 'sub', 'data.bin'), BINARY);
  writeFileSync(join(root, 'sub', LONG_DIR, LONG_FILE), 'deep\n');
  writeFileSync(join(root, 'sub', 'ünïcode.txt'), 'utf8 name\n');
  symlinkSync('hello.txt', join(root, 'link'));
  return root;
}

function systemTar(args: string[], cwd: string, input?: Buffer): Buffer {
  return execFileSync('tar', args, { cwd, input, maxBuffer: 64 * 1024 * 1024 });
}

function expectTree(fs: PodFilesystem, base: string): void {
  expect(fs.readFile(`${base}/hello.txt`).toString()).toBe('hello\n');
  expect(fs.readFile(`${base}/empty`).length).toBe(0);
  expect(fs.readFile(`${base}/sub/data.bin`).equals(BINARY)).toBe(true);
  expect(fs.readFile(`${base}/sub/${LONG_DIR}/${LONG_FILE}`).toString()).toBe('deep\n');
  expect(fs.readFile(`${base}/sub/ünïcode.txt`).toString()).toBe('utf8 name\n');
  expect(fs.lstat(`${base}/link`)).toMatchObject({ kind: 'symlink', target: 'hello.txt' });
}

describe('fake tar and GNU tar read each other', () => {
  const tree = localTree();
  const parent = join(tree, '..');

  it.each(['gnu', 'ustar', 'pax'])(
    'extracts what GNU tar writes in %s format, however the bytes arrive',
    async (format) => {
      // ustar cannot hold the 231-byte path: GNU tar leaves that member out (and exits 2).
      const archive = spawnSync('tar', ['-c', `--format=${format}`, '-f', '-', 'tree'], {
        cwd: parent,
      }).stdout;
      for (const c of chunkings(archive, [3])) {
        const fs = newContainerFilesystem('p');
        const r = await runProgram(['tar', '-xmf', '-', '-C', '/tmp'], {
          fs,
          stdin: Buffer.concat(c.chunks),
        });
        if (format === 'ustar') {
          expect(fs.readFile('/tmp/tree/hello.txt').toString(), c.name).toBe('hello\n');
          continue;
        }
        expect({ code: r.code, stderr: r.stderr }, c.name).toEqual({ code: 0, stderr: '' });
        expectTree(fs, '/tmp/tree');
      }
    },
  );

  it('GNU tar extracts what the fake tar writes (tar cf - /abs/path), leading slash removed', async () => {
    const fs = newContainerFilesystem('p');
    const archive = systemTar(['-c', '--format=pax', '-f', '-', 'tree'], parent);
    expect((await runProgram(['tar', 'xf', '-', '-C', '/root'], { fs, stdin: archive })).code).toBe(0);
    const r = await runProgram(['tar', 'cf', '-', '/root/tree'], { fs });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("tar: Removing leading `/' from member names\n");
    expect(r.stdout.length % 10240).toBe(0);
    const out = makeTempDir('tar-out-');
    systemTar(['-x', '-f', '-'], out, r.stdout);
    expect(readFileSync(join(out, 'root/tree/sub/data.bin')).equals(BINARY)).toBe(true);
    expect(readFileSync(join(out, 'root/tree', 'sub', LONG_DIR, LONG_FILE), 'utf8')).toBe('deep\n');
    expect(systemTar(['-t', '-f', '-'], out, r.stdout).toString()).toContain(
      `root/tree/sub/${LONG_DIR}/${LONG_FILE}`,
    );
  });

  it('reports what GNU tar reports: missing paths, a missing -C directory, ".." members, a full disk', async () => {
    const missing = await runProgram(['tar', 'cf', '-', '/nope']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      "tar: Removing leading `/' from member names\ntar: /nope: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n",
    );
    const noDir = await runProgram(['tar', '-xmf', '-', '-C', '/missing'], { stdin: Buffer.alloc(1024) });
    expect(noDir).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('tar: /missing: Cannot open: No such file or directory'),
    });

    const evil = makeTempDir('tar-evil-');
    writeFileSync(join(evil, 'x'), 'x');
    const dotdot = systemTar(['-c', '-f', '-', '--transform=s,^,../,', 'x'], evil);
    const fs = newContainerFilesystem('p');
    const r = await runProgram(['tar', 'xf', '-', '-C', '/tmp'], { fs, stdin: dotdot });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("tar: ../x: Member name contains '..'");
    expect(fs.lstat('/x')).toBeUndefined();

    const small = new PodFilesystem(10_000);
    small.mkdir('/tmp');
    const full = await runProgram(['tar', 'xf', '-', '-C', '/tmp'], {
      fs: small,
      stdin: systemTar(['-c', '-f', '-', 'tree'], parent),
    });
    expect(full.code).toBe(2);
    expect(full.stderr).toContain('tar: tree/sub/data.bin: Cannot write: No space left on device');
    expect(small.usedBytes).toBeLessThanOrEqual(10_000);
  });

  it('refuses a corrupt header and a truncated archive with GNU tar messages', async () => {
    const archive = systemTar(['-c', '-f', '-', 'tree'], parent);
    const corrupt = Buffer.from(archive);
    corrupt.writeUInt8(corrupt.readUInt8(0) ^ 0x55, 0);
    expect((await runProgram(['tar', 'xf', '-'], { stdin: corrupt })).stderr).toContain(
      'tar: This does not look like a tar archive',
    );
    const truncated = await runProgram(['tar', 'xf', '-', '-C', '/tmp'], {
      stdin: archive.subarray(0, 1500),
    });
    expect(truncated).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('Unexpected EOF in archive'),
    });
  });

  it('fuzz: mutated archives end in entries or a TarFormatError, nothing else', () => {
    const archive = systemTar(['-c', '--format=pax', '-f', '-', 'tree'], parent);
    for (let seed = 1; seed <= 200; seed++) {
      const random = prng(seed);
      const input = Buffer.from(archive.subarray(0, int(random, archive.length)));
      for (let k = 0, n = 1 + int(random, 8); k < n; k++)
        input[int(random, Math.min(input.length, 4096))] = int(random, 256);
      let bytes = 0;
      const reader = new TarReader(
        {
          entry() {},
          data: (c) => {
            bytes += c.length;
          },
          end() {},
        },
        64 * 1024,
      );
      try {
        for (const c of randomChunks(input, seed)) reader.push(c);
      } catch (err) {
        expect(err, `seed ${seed}`).toBeInstanceOf(TarFormatError);
      }
      expect(bytes).toBeLessThanOrEqual(input.length);
    }
  });

  it('lists (t) and reports members with v', async () => {
    const archive = systemTar(['-c', '-f', '-', 'tree/hello.txt', 'tree/sub/data.bin'], parent);
    expect((await runProgram(['tar', 'tf', '-'], { stdin: archive })).stdout.toString()).toBe(
      'tree/hello.txt\ntree/sub/data.bin\n',
    );
    const unsupported = await runProgram(['tar', 'czf', '-', '/etc']);
    expect(unsupported).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('compression (-z) is not supported'),
    });
  });
});
