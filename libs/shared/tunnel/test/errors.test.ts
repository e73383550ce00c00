import { ResetCode } from '@pullplane/proto';
import { describe, expect, it } from 'vitest';
import {
  isRouteRefusal,
  relayedResetCode,
  routeRefusalCode,
  TunnelError,
  TunnelErrorCode,
} from '../src/index.js';

const codes = Object.values(TunnelErrorCode);

describe('the reset table', () => {
  it('sends every TunnelError as a reset that reads back as the same error (a tunnel going away as one lost)', () => {
    for (const code of codes) {
      const sent = new TunnelError(code, 'why').resetCode;
      expect(sent, code).not.toBe(ResetCode.UNSPECIFIED);
      const read = TunnelError.fromReset(sent, 'why').code;
      expect(read, code).toBe(code === TunnelErrorCode.GOING_AWAY ? TunnelErrorCode.UNAVAILABLE : code);
    }
  });

  it('reads a route refusal as "agent not found", an unknown code as internal, and keeps the reason', () => {
    expect(TunnelError.fromReset(ResetCode.NO_ROUTE, 'not here')).toMatchObject({
      code: TunnelErrorCode.NOT_FOUND,
      message: 'not here',
    });
    expect(TunnelError.fromReset(999 as ResetCode, '').code).toBe(TunnelErrorCode.INTERNAL);
    expect(TunnelError.fromReset(ResetCode.CANCEL, '').message).toBe('stream reset by peer');
    expect(isRouteRefusal(ResetCode.NO_ROUTE)).toBe(true);
    expect(isRouteRefusal(ResetCode.NOT_FOUND)).toBe(false);
  });

  it('makes a refusal the gateway cannot mend a route refusal, and nothing else', () => {
    const refusal = (code: TunnelErrorCode) => routeRefusalCode(new TunnelError(code, 'x'));
    expect(refusal(TunnelErrorCode.NOT_FOUND)).toBe(ResetCode.NO_ROUTE);
    expect(refusal(TunnelErrorCode.GOING_AWAY)).toBe(ResetCode.NO_ROUTE);
    expect(refusal(TunnelErrorCode.REFUSED)).toBe(ResetCode.REFUSED);
    expect(refusal(TunnelErrorCode.UNAVAILABLE)).toBe(ResetCode.UNAVAILABLE);
    expect(refusal(TunnelErrorCode.FLOW_CONTROL)).toBe(ResetCode.FLOW_CONTROL);
  });

  it("passes a peer's reset on unchanged, except a route refusal (an agent's claim) and codes it does not know", () => {
    for (const code of Object.values(ResetCode).filter((c): c is ResetCode => typeof c === 'number')) {
      if (code === ResetCode.UNSPECIFIED || code === ResetCode.NO_ROUTE) continue;
      expect(relayedResetCode(code), ResetCode[code]).toBe(code);
    }
    expect(relayedResetCode(ResetCode.NO_ROUTE)).toBe(ResetCode.NOT_FOUND);
    expect(relayedResetCode(ResetCode.UNSPECIFIED)).toBe(ResetCode.INTERNAL);
    expect(relayedResetCode(999 as ResetCode)).toBe(ResetCode.INTERNAL);
  });
});
