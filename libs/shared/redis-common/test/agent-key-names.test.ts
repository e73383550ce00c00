import { describe, expect, it } from 'vitest';
import { toClientName, toLocalName } from '../src/index.js';

const b = (s: string) => Buffer.from(s, 'latin1');

describe('the agent’s side of the cut', () => {
  it('cuts <agent>_ out, refuses other agents and shapeless keys, and puts it back', () => {
    const local = toLocalName(b('app|managed-resources|east_guestbook|1.8.3.gz'), 'east');
    expect(typeof local).toBe('object');
    if (typeof local === 'string') return;
    expect(local.local.toString()).toBe('app|managed-resources|guestbook|1.8.3.gz');
    expect(toClientName(local.local, local.prefixLength, 'east').toString()).toBe(
      'app|managed-resources|east_guestbook|1.8.3.gz',
    );
    expect(toLocalName(b('app|managed-resources|west_guestbook|1'), 'east')).toBe('it belongs to agent west');
    expect(toLocalName(b('plainkey'), 'east')).toBe('no <agent>_ part');
    expect(toLocalName(b('east_key'), 'east')).toMatch(/prefix/);
    expect(toLocalName(b('app|managed-resources|Ea_x'), undefined)).toMatch(/DNS label/);
    expect(toLocalName(b('app|resources-tree|east_*'), 'east')).toMatchObject({ agent: 'east' });
  });
});
