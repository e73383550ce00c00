import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, defineOption, defineOptions, loadConfig, type OptionDef } from '../src/index.js';
import { tempDir } from './fixtures.js';

/** Loads one option from env var V and returns its value or the problem text. */
function parseOne(option: OptionDef, raw: string, cwd?: string): unknown {
  const options = [{ ...option, env: 'V' }] as const;
  try {
    const { config } = loadConfig(options, { argv: [], env: { V: raw }, ...(cwd ? { cwd } : {}) });
    return Object.values(config)[0];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.problems.map((p) => p.message).join('\n');
  }
}

const base = { flag: 'x', description: 'X.' } as const;

describe('option types', () => {
  it('string, with an optional whole-value pattern', () => {
    expect(parseOne({ ...base, type: 'string' }, ' spaced ')).toBe(' spaced ');
    const pat = { ...base, type: 'string', pattern: /[a-z]+/ } as const;
    expect(parseOne(pat, 'abc')).toBe('abc');
    expect(parseOne(pat, 'abc1')).toBe('--x: "abc1" does not match /[a-z]+/ (from env V)');
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['t', true],
    ['1', true],
    ['false', false],
    ['F', false],
    ['0', false],
  ])('boolean %s', (raw, value) => {
    expect(parseOne({ ...base, type: 'boolean' }, raw)).toBe(value);
  });

  it('boolean rejects other words', () => {
    expect(parseOne({ ...base, type: 'boolean' }, 'yes')).toBe(
      '--x: "yes" is not a boolean (true or false) (from env V)',
    );
  });

  it('int with bounds', () => {
    const opt = { ...base, type: 'int', min: -5, max: 10 } as const;
    expect(parseOne(opt, '7')).toBe(7);
    expect(parseOne(opt, '-5')).toBe(-5);
    expect(parseOne(opt, '+3')).toBe(3);
    expect(parseOne(opt, '11')).toBe('--x: "11" must be between -5 and 10 (from env V)');
    expect(parseOne(opt, '1.5')).toBe('--x: "1.5" is not an integer (from env V)');
    expect(parseOne(opt, '0x10')).toBe('--x: "0x10" is not an integer (from env V)');
    expect(parseOne(opt, '99999999999999999999')).toContain('is not an integer');
    expect(parseOne({ ...base, type: 'int', min: 1 }, '0')).toContain('must be at least 1');
    expect(parseOne({ ...base, type: 'int', max: 1 }, '2')).toContain('must be at most 1');
  });

  it('port', () => {
    const opt = { ...base, type: 'port' } as const;
    expect(parseOne(opt, '0')).toBe(0);
    expect(parseOne(opt, '65535')).toBe(65535);
    expect(parseOne(opt, ' 8080 ')).toBe(8080);
    for (const bad of ['65536', '-1', 'abc', '80.5', '']) {
      if (bad === '') continue; // empty env means unset
      expect(parseOne(opt, bad)).toBe(`--x: ${JSON.stringify(bad)} is not a port (0-65535) (from env V)`);
    }
  });

  it('duration, with bounds, negatives and bare numbers', () => {
    const opt = { ...base, type: 'duration', min: '1s', max: '1h' } as const;
    expect(parseOne(opt, '1m30s')).toBe(90_000);
    expect(parseOne(opt, '500ms')).toBe('--x: "500ms" must be between 1s and 1h (from env V)');
    expect(parseOne(opt, '2h')).toBe('--x: "2h" must be between 1s and 1h (from env V)');
    expect(parseOne({ ...base, type: 'duration' }, '-1s')).toBe(
      '--x: "-1s" must not be negative (from env V)',
    );
    expect(parseOne({ ...base, type: 'duration' }, '30')).toContain('is not a duration (missing unit');
    expect(parseOne({ ...base, type: 'duration', bareNumberUnit: 's' }, '30')).toBe(30_000);
    expect(parseOne({ ...base, type: 'duration', min: 1000 }, '1ms')).toBe(
      '--x: "1ms" must be at least 1000ms (from env V)',
    );
  });

  it('duration defaults may be strings or milliseconds', () => {
    const opts = defineOptions([
      { flag: 'a', type: 'duration', default: '1m', description: 'A.' },
      { flag: 'b', type: 'duration', default: 250, description: 'B.' },
    ]);
    expect(loadConfig(opts, { argv: [], env: {} }).config).toEqual({ a: 60_000, b: 250 });
  });

  it('enum', () => {
    const opt = { ...base, type: 'enum', values: ['json', 'text'] } as const;
    expect(parseOne(opt, 'json')).toBe('json');
    expect(parseOne(opt, 'JSON')).toBe('--x: "JSON" is not one of: json, text (from env V)');
  });

  it('list: comma-separated, trimmed, empties dropped', () => {
    const opt = { ...base, type: 'list' } as const;
    expect(parseOne(opt, 'a, b,,c ,')).toEqual(['a', 'b', 'c']);
    expect(parseOne(opt, ',')).toEqual([]);
  });

  it('url, with optional scheme restriction', () => {
    expect(parseOne({ ...base, type: 'url' }, 'https://argocd.example.com:8443/x')).toBe(
      'https://argocd.example.com:8443/x',
    );
    expect(parseOne({ ...base, type: 'url' }, 'argocd:8080')).toBe('argocd:8080'); // scheme "argocd:" is legal
    expect(parseOne({ ...base, type: 'url' }, 'not a url')).toBe(
      '--x: "not a url" is not a URL (from env V)',
    );
    expect(parseOne({ ...base, type: 'url', schemes: ['https'] }, 'http://a')).toBe(
      '--x: "http://a" must use scheme https (from env V)',
    );
  });

  it('host-port', () => {
    const opt = { ...base, type: 'host-port' } as const;
    expect(parseOne(opt, 'principal.example.com:8443')).toEqual({
      host: 'principal.example.com',
      port: 8443,
    });
    expect(parseOne(opt, '[::1]:443')).toEqual({ host: '::1', port: 443 });
    expect(parseOne(opt, ':8443')).toEqual({ host: '', port: 8443 });
    expect(parseOne(opt, 'example.com')).toBe(
      '--x: "example.com" is not host:port (missing port) (from env V)',
    );
    expect(parseOne(opt, 'example.com:99999')).toContain('(bad port)');
    expect(parseOne(opt, 'example.com:http')).toContain('(bad port)');
    expect(parseOne(opt, 'a b:80')).toContain('(bad host)');
    expect(parseOne(opt, 'fe80::1:2:80x')).toContain('wrap IPv6 addresses in []');
    expect(parseOne(opt, '[nope]:80')).toContain('bad IPv6 address');
    const withDefault = { ...base, type: 'host-port', defaultPort: 443 } as const;
    expect(parseOne(withDefault, 'example.com')).toEqual({ host: 'example.com', port: 443 });
    expect(parseOne(withDefault, '::1')).toEqual({ host: '::1', port: 443 });
    expect(parseOne(withDefault, '[::1]')).toEqual({ host: '::1', port: 443 });
  });

  it('file must exist when loaded, with kind checks and relative paths', () => {
    const dir = tempDir();
    const file = join(dir, 'tls.crt');
    writeFileSync(file, 'cert');
    mkdirSync(join(dir, 'sub'));
    expect(parseOne({ ...base, type: 'file' }, file)).toBe(file);
    expect(parseOne({ ...base, type: 'file' }, 'tls.crt', dir)).toBe('tls.crt');
    expect(parseOne({ ...base, type: 'file' }, join(dir, 'nope'))).toBe(
      `--x: ${JSON.stringify(join(dir, 'nope'))} does not exist (from env V)`,
    );
    expect(parseOne({ ...base, type: 'file' }, join(dir, 'sub'))).toContain('is not a regular file');
    expect(parseOne({ ...base, type: 'file', kind: 'directory' }, join(dir, 'sub'))).toBe(join(dir, 'sub'));
    expect(parseOne({ ...base, type: 'file', kind: 'directory' }, file)).toContain('is not a directory');
    expect(parseOne({ ...base, type: 'file', kind: 'any' }, file)).toBe(file);
  });

  it('file defaults are checked too', () => {
    const missing = join(tempDir(), 'missing.pem');
    const opts = defineOptions([{ flag: 'ca', type: 'file', default: missing, description: 'CA.' }]);
    expect(() => loadConfig(opts, { argv: [], env: {} })).toThrow(
      `--ca: ${JSON.stringify(missing)} does not exist (from default)`,
    );
  });

  it('regex', () => {
    const value = parseOne({ ...base, type: 'regex', flags: 'i' }, '^argo-(dev|prod)$');
    expect(value).toBeInstanceOf(RegExp);
    expect((value as RegExp).test('ARGO-dev')).toBe(true);
    expect(parseOne({ ...base, type: 'regex' }, '(')).toBe(
      '--x: "(" is not a valid regular expression (from env V)',
    );
  });

  it('truncates very long values in messages', () => {
    const msg = parseOne({ ...base, type: 'port' }, '9'.repeat(500)) as string;
    expect(msg.length).toBeLessThan(200);
    expect(msg).toContain('...');
  });
});

describe('defineOptions', () => {
  it.each([
    [[{ flag: 'Bad_Flag', type: 'string', description: '' }], /not kebab-case/],
    [[{ flag: 'help', type: 'boolean', description: '' }], /reserved/],
    [
      [
        { flag: 'a', type: 'string', description: '' },
        { flag: 'a', type: 'int', description: '' },
      ],
      /flag a is used by both/,
    ],
    [
      [
        { flag: 'a', type: 'string', env: 'X', description: '' },
        { flag: 'b', type: 'string', env: ['Y', 'X'], description: '' },
      ],
      /env X is used by both --a and --b/,
    ],
    [
      [
        { flag: 'a', type: 'string', paramsKey: 'p.k', description: '' },
        { flag: 'b', type: 'string', paramsKey: 'p.k', description: '' },
      ],
      /params key p.k/,
    ],
    [[{ flag: 'a', type: 'string', env: 'BAD-NAME', description: '' }], /bad env name/],
    [[{ flag: 'a', type: 'port', default: 70000, description: '' }], /default is not a port/],
    [[{ flag: 'a', type: 'int', default: 5, min: 10, description: '' }], /below min/],
    [[{ flag: 'a', type: 'int', min: 10, max: 1, description: '' }], /min is greater than max/],
    [[{ flag: 'a', type: 'duration', default: '30', description: '' }], /default is not a duration/],
    [[{ flag: 'a', type: 'enum', values: ['x'], default: 'y', description: '' }], /not one of the values/],
    [[{ flag: 'a', type: 'regex', default: '(', description: '' }], /not a valid regular expression/],
  ] as const)('rejects bad tables (%#)', (table, message) => {
    try {
      defineOptions(table as readonly OptionDef[]);
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('CONFIG_OPTION_DEFINITION');
      expect((err as Error).message).toMatch(message);
    }
  });

  it('checks plain arrays passed straight to loadConfig', () => {
    const table: OptionDef[] = [{ flag: 'params-file', type: 'string', description: '' }];
    expect(() => loadConfig(table, { argv: [], env: {} })).toThrow(/reserved/);
  });

  it('defineOption keeps the literal type for composing tables', () => {
    const port = defineOption({ flag: 'metrics-port', type: 'port', default: 8000, description: 'Metrics.' });
    const { config } = loadConfig([port], { argv: ['--metrics-port=9000'], env: {} });
    expect(config.metricsPort).toBe(9000);
  });
});
