import { describe, expect, it } from 'vitest';
import { KeyRouter, routeCommand, validateKeyPrefixes } from '../src/index.js';

const keys = new KeyRouter();
const route = (k: string | Buffer) => keys.route(typeof k === 'string' ? Buffer.from(k, 'latin1') : k);
const b = (s: string) => Buffer.from(s, 'latin1');

describe('KeyRouter: which keys are an agent’s', () => {
  it('routes Argo CD’s per-application caches by the part before the first _', () => {
    expect(route('app|managed-resources|east_guestbook|1.8.3.gz')).toEqual({
      kind: 'agent',
      agent: 'east',
      prefixLength: 'app|managed-resources|'.length,
    });
    expect(route('app|resources-tree|east-2_my_app_x|1.8.3')).toMatchObject({
      kind: 'agent',
      agent: 'east-2',
    });
    // Another agent's name later in the key changes nothing.
    expect(route('app|resources-tree|east_west_app|west_x')).toMatchObject({ agent: 'east' });
  });

  it('leaves every other key to the principal, unchanged', () => {
    for (const k of [
      'app|managed-resources|guestbook|1.8.3.gz', // control-plane namespace: no <agent>_
      'app|managed-resources|', // nothing after the prefix
      'app|managed-resources|east|x_y', // the `_` is in a later field
      'app|resources-tree',
      'APP|managed-resources|east_x', // prefixes are case-sensitive, like Redis keys
      'cluster|info|east_x',
      'mfst|east_x',
      '',
      'x',
    ])
      expect(route(k), k).toEqual({ kind: 'principal' });
  });

  it('refuses keys whose agent part is not a DNS label, whatever the bytes', () => {
    for (const k of [
      'app|managed-resources|_app|1', // empty agent
      'app|managed-resources|East_app|1',
      'app|managed-resources|-east_app|1',
      'app|managed-resources|east-_app|1',
      'app|managed-resources|ea st_app|1',
      'app|managed-resources|east\r\n_app|1',
      'app|managed-resources|east\x00_app|1',
      'app|managed-resources|a.b_app|1',
      'app|managed-resources|east*_app|1',
      `app|managed-resources|${'a'.repeat(64)}_app|1`,
    ])
      expect(route(k).kind, JSON.stringify(k)).toBe('invalid');
    expect(route(Buffer.concat([b('app|resources-tree|'), Buffer.from([0xe9]), b('_x')])).kind).toBe(
      'invalid',
    );
    expect(route(`app|managed-resources|${'a'.repeat(63)}_app|1`).kind).toBe('agent');
  });

  it('validates configured prefixes so the agent finds the same cut', () => {
    expect(validateKeyPrefixes(['app|managed-resources|'])).toEqual([]);
    expect(validateKeyPrefixes(['app|managed_resources|'])).toHaveLength(1);
    expect(validateKeyPrefixes(['app|managed-resources'])).toHaveLength(1);
    expect(validateKeyPrefixes(['app|*|'])).toHaveLength(1);
    expect(validateKeyPrefixes([])).toHaveLength(1);
    expect(() => new KeyRouter(['nope'])).toThrow(/must end with/);
    const custom = new KeyRouter(['cache|']);
    expect(custom.route(b('cache|east_x'))).toMatchObject({ agent: 'east', prefixLength: 6 });
    expect(custom.route(b('app|managed-resources|east_x'))).toEqual({ kind: 'principal' });
  });
});

describe('routeCommand', () => {
  const r = (...args: string[]) => routeCommand(args[0]!, args.slice(1).map(b), keys);
  const A = 'app|managed-resources|east_x|1.gz';
  const B = 'app|managed-resources|west_x|1.gz';

  it('sends agent-capable commands to the agent, everything else to the principal', () => {
    expect(r('get', A)).toEqual({ kind: 'agent', agent: 'east' });
    expect(r('set', A, 'v', 'PX', '100')).toEqual({ kind: 'agent', agent: 'east' });
    expect(r('publish', 'app|resources-tree|east_x|1', '')).toEqual({ kind: 'agent', agent: 'east' });
    expect(r('set', 'k', A)).toEqual({ kind: 'principal' }); // a value that looks like a key
    expect(r('hset', 'h', 'f', A)).toEqual({ kind: 'principal' });
    expect(r('get')).toEqual({ kind: 'principal' }); // the principal answers the arity error
  });

  it('splits MGET/DEL/EXISTS/UNLINK by destination, keeping key positions', () => {
    expect(r('mget', A, 'p', B, A)).toEqual({
      kind: 'split',
      merge: 'mget',
      parts: [
        { agent: 'east', indexes: [0, 3] },
        { agent: undefined, indexes: [1] },
        { agent: 'west', indexes: [2] },
      ],
    });
    expect(r('del', A, A)).toEqual({ kind: 'agent', agent: 'east' });
    expect(r('exists', 'p', 'q')).toEqual({ kind: 'principal' });
  });

  it('refuses unsupported and spanning commands on agent keys, and invalid agent keys anywhere', () => {
    expect(r('hget', A, 'f')).toMatchObject({
      kind: 'refused',
      message: expect.stringMatching(/^ERR unsupported command for agent key/),
    });
    expect(r('rename', 'p', A)).toMatchObject({
      kind: 'refused',
      message: expect.stringMatching(/cannot be used with agent keys/),
    });
    expect(r('eval', 'return 1', '1', A)).toMatchObject({ kind: 'refused' });
    expect(r('object', 'encoding', A)).toMatchObject({ kind: 'refused' });
    expect(r('somemodule.cmd', A)).toMatchObject({ kind: 'refused' });
    expect(r('get', 'app|managed-resources|BAD_x')).toMatchObject({
      kind: 'refused',
      message: expect.stringMatching(/invalid agent key/),
    });
    expect(r('mget', 'p', 'app|managed-resources|_x')).toMatchObject({ kind: 'refused' });
  });
});
