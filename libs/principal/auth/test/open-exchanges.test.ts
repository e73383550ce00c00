import { describe, expect, it } from 'vitest';
import { type ExchangeRevocation, OpenExchanges } from '../src/index.js';

describe('OpenExchanges', () => {
  const track = (open: OpenExchanges, grant: { agent: string; jti?: string }) => {
    const ended: ExchangeRevocation[] = [];
    const release = open.add(grant, (why) => ended.push(why));
    return { ended, release };
  };

  it("ends a token's exchanges on its revocation, once each, and no one else's", () => {
    const open = new OpenExchanges();
    const a = track(open, { agent: 'agent-a', jti: 't1' });
    const b = track(open, { agent: 'agent-b', jti: 't1' });
    const other = track(open, { agent: 'agent-a', jti: 't2' });
    const cert = track(open, { agent: 'agent-a' });
    expect(open.endToken('t1', 'caller token t1 revoked')).toBe(2);
    expect(a.ended).toEqual([{ kind: 'token', reason: 'caller token t1 revoked' }]);
    expect(b.ended).toEqual([{ kind: 'token', reason: 'caller token t1 revoked' }]);
    // Revoked again (the store and the control event both say so): nothing left to end.
    expect(open.endToken('t1', 'again')).toBe(0);
    expect(a.ended).toHaveLength(1);
    expect(other.ended).toEqual([]);
    expect(cert.ended).toEqual([]);
    expect(open.size).toBe(2);
  });

  it('ends every exchange to a revoked agent, whatever let it in, and forgets released ones', () => {
    const open = new OpenExchanges();
    const byToken = track(open, { agent: 'agent-a', jti: 't1' });
    const byCert = track(open, { agent: 'agent-a' });
    const done = track(open, { agent: 'agent-a', jti: 't3' });
    const elsewhere = track(open, { agent: 'agent-b', jti: 't1' });
    done.release();
    expect(open.endAgent('agent-a', 'agent agent-a revoked: gone')).toBe(2);
    expect(byToken.ended).toEqual([{ kind: 'agent', reason: 'agent agent-a revoked: gone' }]);
    expect(byCert.ended).toEqual([{ kind: 'agent', reason: 'agent agent-a revoked: gone' }]);
    expect(done.ended).toEqual([]);
    // An exchange ended through its agent is no longer under its token either.
    expect(open.endToken('t1', 'later')).toBe(1);
    expect(byToken.ended).toHaveLength(1);
    expect(elsewhere.ended).toEqual([{ kind: 'token', reason: 'later' }]);
    expect(open.size).toBe(0);
  });
});
