import { TunnelError, TunnelErrorCode } from '@pullplane/tunnel';
import { describe, expect, it } from 'vitest';
import { answerText, exchangeFailure, statusAnswer, tunnelFailure } from '../src/index.js';
import { TEST_ERRORS } from './support.js';

describe('the one tunnel-failure table', () => {
  it.each([
    [TunnelErrorCode.NOT_FOUND, 'NOT_CONNECTED'],
    [TunnelErrorCode.REFUSED, 'REFUSED'],
    [TunnelErrorCode.DEADLINE_EXCEEDED, 'TIMEOUT'],
    [TunnelErrorCode.UNAVAILABLE, 'TUNNEL_LOST'],
    [TunnelErrorCode.GOING_AWAY, 'TUNNEL_LOST'],
    [TunnelErrorCode.CANCELLED, 'FAILED'],
    [TunnelErrorCode.PROTOCOL, 'FAILED'],
    [TunnelErrorCode.INTERNAL, 'FAILED'],
  ])('names reset code %s %s', (code, failure) => {
    expect(tunnelFailure(new TunnelError(code, 'x'))).toBe(failure);
  });

  it('says a revocation rather than the reset it caused, and names anything else FAILED', () => {
    const names = {
      NOT_CONNECTED: 'A',
      REFUSED: 'B',
      TIMEOUT: 'C',
      TUNNEL_LOST: 'D',
      FAILED: 'E',
      TOO_LARGE: 'F',
      TOKEN_REVOKED: 'G',
      AGENT_REVOKED: 'H',
    } as const;
    const cancelled = new TunnelError(TunnelErrorCode.CANCELLED, 'cancelled');
    expect(exchangeFailure(names, cancelled, { kind: 'token', reason: 'caller token j revoked' })).toEqual({
      name: 'G',
      detail: 'caller token j revoked',
    });
    expect(exchangeFailure(names, cancelled, { kind: 'agent', reason: 'agent a revoked' }).name).toBe('H');
    expect(exchangeFailure(names, new TunnelError(TunnelErrorCode.NOT_FOUND, 'gone'))).toEqual({
      name: 'A',
      detail: 'gone',
    });
    expect(exchangeFailure(names, new Error('bug'))).toEqual({ name: 'E', detail: 'Error: bug' });
  });
});

describe('the one Status', () => {
  it('carries the status, the reason of that status, the message with its detail, and the code as cause', () => {
    const a = statusAnswer(TEST_ERRORS.TIMEOUT, 'no answer within 5 ms');
    expect(a.status).toBe(504);
    expect(a.headers).toEqual({
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(a.body)),
    });
    expect(JSON.parse(a.body)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'the agent did not answer in time: no answer within 5 ms',
      reason: 'Timeout',
      details: { causes: [{ reason: 'TEST_TIMEOUT' }] },
      code: 504,
    });
  });

  it("keeps a catalog entry's own reason, and a detail that already says the message", () => {
    const a = statusAnswer(TEST_ERRORS.NOT_CONNECTED, 'Agent is not connected: agent-a');
    expect(JSON.parse(a.body)).toMatchObject({
      reason: 'ServiceUnavailable',
      message: 'Agent is not connected: agent-a',
    });
    expect(JSON.parse(statusAnswer(TEST_ERRORS.FAILED).body).message).toBe('the request failed');
  });

  it('adds the headers a route asks for, and writes as raw bytes with the connection closing', () => {
    const a = statusAnswer(TEST_ERRORS.SCREENED, undefined, { allow: 'GET' });
    expect(a.headers.allow).toBe('GET');
    const text = answerText(a);
    expect(text.startsWith('HTTP/1.1 405 Method Not Allowed\r\n')).toBe(true);
    expect(text).toContain('\r\nallow: GET\r\nconnection: close\r\n\r\n{');
    expect(text.endsWith(a.body)).toBe(true);
  });
});
