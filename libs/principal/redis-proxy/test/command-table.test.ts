import { AGENT_COMMANDS } from '@pullplane/redis-common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeOf } from '../src/command-routing.js';
import { type KeySpec, someKey } from '../src/commands/spec.js';
import { CommandBook, commandLabel, needsOwnConnection } from '../src/commands/table.js';
import { COMMANDS, DEFAULT_ALLOWED_COMMANDS, KeyRouter, validateAllowedCommands } from '../src/index.js';
import { type Stack, startStack } from './harness.js';

// The command table is the proxy's one source of what it knows about each command: these check
// that its entries agree with each other, and that what it derives is what the proxy does.
const b = (s: string) => Buffer.from(s);
const specs = [...COMMANDS.values()];
const keyIndexes = (spec: KeySpec, argc: number) => {
  const seen: number[] = [];
  someKey(
    spec,
    Array.from({ length: argc }, (_, i) => b(String(i))),
    (i) => {
      seen.push(i);
      return false;
    },
  );
  return seen;
};

describe('the command table', () => {
  it('names each command once, in lower case, as Redis spells it', () => {
    expect(COMMANDS.size).toBeGreaterThan(200);
    for (const [name, spec] of COMMANDS) {
      expect(spec.name).toBe(name);
      expect(name).toMatch(/^[a-z][a-z0-9_-]*$/);
      for (const sub of Object.keys(spec.subcommands ?? {})) expect(sub).toMatch(/^[a-z][a-z0-9_-]*$/);
    }
  });

  it('serves for agent keys only commands it relays by default, so both kinds of key accept the same set', () => {
    const served = specs.filter((s) => s.agent !== undefined).map((s) => s.name);
    expect(served.sort()).toEqual(
      [
        'del',
        'exists',
        'expire',
        'get',
        'mget',
        'pexpire',
        'psetex',
        'pttl',
        'publish',
        'set',
        'setex',
        'ttl',
        'unlink',
      ].sort(),
    );
    for (const name of served) expect(DEFAULT_ALLOWED_COMMANDS).toContain(name);
    // A command whose keys are all arguments says how its destinations' answers are merged.
    for (const s of specs)
      if (s.agent) expect(s.agent.merge !== undefined, s.name).toBe(s.agent.keys === 'all');
  });

  it('routes to agents exactly the commands an agent runs, by the rules it runs them by', () => {
    const routed = new Map(specs.flatMap((s) => (s.agent ? [[s.name, s.agent] as const] : [])));
    expect(routed).toEqual(new Map(AGENT_COMMANDS));
  });

  it('gives a local answer only where one can run, and at most one way of handling each command', () => {
    for (const s of specs) {
      expect(s.local !== undefined && s.relay !== undefined, s.name).toBe(false);
      const subAnswers = Object.values(s.subcommands ?? {}).filter((sub) => sub.local !== undefined);
      // Subcommand answers are reached through the container's relay.
      if (subAnswers.length > 0) expect(s.relay, s.name).toBeDefined();
      // Only what the proxy answers itself can be run as usual, or refused, inside MULTI.
      if (s.inMulti !== undefined) expect(s.local, s.name).toBeDefined();
    }
  });

  it('refuses to let an operator allow what can never be relayed, and nothing else', () => {
    const never = [...COMMANDS.values()].flatMap((s) => [
      ...(s.policy === 'never' ? [s.name] : []),
      ...Object.entries(s.subcommands ?? {})
        .filter(([, sub]) => sub.policy === 'never')
        .map(([sub]) => `${s.name}|${sub}`),
    ]);
    expect(never.sort()).toEqual(
      [
        'client|caching',
        'client|reply',
        'client|tracking',
        'monitor',
        'psync',
        'replconf',
        'ssubscribe',
        'sunsubscribe',
        'sync',
      ].sort(),
    );
    for (const name of never) expect(validateAllowedCommands([name.toUpperCase()])).toHaveLength(1);
    expect(validateAllowedCommands(['flushall', 'CONFIG|SET', 'json.get'])).toEqual([]);
    expect(validateAllowedCommands(['config set'])[0]).toMatch(/not a command name/);
  });

  it("finds keys where Redis' COMMAND table puts them", () => {
    // MSET k v k v: every other argument; BITOP op dest src…: from the second; BLPOP k… timeout.
    expect(keyIndexes(COMMANDS.get('mset')!.keys, 4)).toEqual([0, 2]);
    expect(keyIndexes(COMMANDS.get('bitop')!.keys, 4)).toEqual([1, 2, 3]);
    expect(keyIndexes(COMMANDS.get('blpop')!.keys, 3)).toEqual([0, 1]);
    expect(keyIndexes(COMMANDS.get('hset')!.keys, 3)).toEqual([0]);
    expect(keyIndexes(COMMANDS.get('ping')!.keys, 1)).toEqual([]);
    // Keys that move (EVAL numkeys…): every argument is looked at.
    expect(keyIndexes(COMMANDS.get('eval')!.keys, 3)).toEqual([0, 1, 2]);
  });

  it('labels metrics with Redis names only', () => {
    expect(commandLabel('get')).toBe('get');
    expect(commandLabel('config|set')).toBe('config|set');
    expect(commandLabel('config|nonsense')).toBe('unknown');
    expect(commandLabel('get|x')).toBe('unknown');
    expect(commandLabel('json.get')).toBe('unknown');
  });
});

describe('CommandBook: the table with one proxy allow-list', () => {
  const book = new CommandBook(['client|list', 'DBSIZE', 'json.get']);
  const refusal = (...args: string[]) => book.refusal(book.get(args[0]!), args[0]!, args.slice(1).map(b));

  it('allows the defaults and what the operator added, by command or by subcommand', () => {
    expect(refusal('get', 'k')).toBeUndefined();
    expect(refusal('dbsize')).toBeUndefined();
    expect(refusal('client', 'LIST')).toBeUndefined();
    expect(refusal('client', 'SETNAME', 'x')).toBeUndefined();
    expect(refusal('client', 'kill', 'x')).toBe('client|kill');
    expect(refusal('config', 'Set', 'x', 'y')).toBe('config|set');
    expect(refusal('flushall')).toBe('flushall');
    expect(refusal('x'.repeat(300))).toBe('x'.repeat(128));
    expect(book.allowed.slice(0, DEFAULT_ALLOWED_COMMANDS.length)).toEqual(DEFAULT_ALLOWED_COMMANDS);
    expect(book.allowed.slice(DEFAULT_ALLOWED_COMMANDS.length)).toEqual([
      'client|list',
      'dbsize',
      'json.get',
    ]);
  });

  it('checks every argument of a command the table does not know for agent keys', () => {
    const keys = new KeyRouter();
    const agentKey = b('app|managed-resources|east_x');
    expect(refusal('json.get', 'k')).toBeUndefined();
    expect(routeOf(book.get('json.get'), 'json.get', [b('k'), b('$')], keys)).toEqual({ kind: 'principal' });
    expect(routeOf(book.get('json.get'), 'json.get', [b('k'), agentKey], keys)).toMatchObject({
      kind: 'refused',
      message: expect.stringMatching(/'json\.get' cannot be used with agent keys/),
    });
  });

  it('gives a client its own principal connection for state it keeps there, not for what the proxy answers', () => {
    const own = (...args: string[]) => needsOwnConnection(book.get(args[0]!), args.slice(1).map(b));
    expect(own('select', '1')).toBe(true);
    expect(own('blpop', 'q', '0')).toBe(true);
    expect(own('client', 'LIST')).toBe(true);
    expect(own('client', 'SETNAME', 'x')).toBe(false);
    expect(own('client', 'id')).toBe(false);
    expect(own('get', 'k')).toBe(false);
    expect(own('json.get', 'k')).toBe(false);
  });
});

describe('every command the table serves for agent keys', () => {
  // Arguments for each, so a new entry without a way to try it fails here.
  const SAMPLES: Record<string, (key: string) => string[]> = {
    get: (k) => [k],
    set: (k) => [k, 'v'],
    setex: (k) => [k, '100', 'v'],
    psetex: (k) => [k, '100000', 'v'],
    expire: (k) => [k, '100'],
    pexpire: (k) => [k, '100000'],
    ttl: (k) => [k],
    pttl: (k) => [k],
    publish: (k) => [k, 'm'],
    del: (k) => [k],
    unlink: (k) => [k],
    exists: (k) => [k],
    mget: (k) => [k],
  };
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ agents: ['agent-a'] });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it("runs on the agent's own Redis (the agent's executor accepts the same set)", async () => {
    const c = s.client();
    const served = specs.filter((spec) => spec.agent !== undefined);
    for (const { name } of served) {
      const sample = SAMPLES[name];
      expect(sample, `no sample arguments for ${name}`).toBeDefined();
      const key = `app|managed-resources|agent-a_${name}|1.gz`;
      await c.set(key, 'seed');
      // An agent that refused the command would answer "unsupported command for agent key".
      await expect(c.call(name, ...sample!(key)), name).resolves.not.toBeInstanceOf(Error);
    }
    expect(await s.agents.get('agent-a')!.direct.get('app|managed-resources|setex|1.gz')).toBe('v');
    expect(await s.principalClient.dbsize()).toBe(0);
    c.disconnect();
  });
});
