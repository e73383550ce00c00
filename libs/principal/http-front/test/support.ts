import type { IncomingMessage } from 'node:http';
import type { Open } from '@pullplane/proto';
import { createMemoryLink, type LogicalStream, Multiplexer } from '@pullplane/tunnel';
import {
  type ExchangeReport,
  type Failure,
  type FailureNames,
  type FrontTarget,
  forwardedHeaders,
  type ProxyRoute,
  type StreamOpener,
  statusAnswer,
} from '../src/index.js';

/** A route of the smallest kind: the agent is named by the `x-agent` header, the caller by `x-caller`. */
export const TEST_ERRORS = {
  NO_CALLER: { code: 'TEST_NO_CALLER', status: 401, message: 'no caller' },
  NOT_ALLOWED: { code: 'TEST_NOT_ALLOWED', status: 403, message: 'not allowed' },
  NO_UPGRADES: { code: 'TEST_NO_UPGRADES', status: 400, message: 'no upgrades here' },
  SCREENED: { code: 'TEST_SCREENED', status: 405, message: 'method never forwarded' },
  NOT_CONNECTED: {
    code: 'TEST_NOT_CONNECTED',
    status: 502,
    message: 'Agent is not connected',
    reason: 'ServiceUnavailable',
  },
  REFUSED: { code: 'TEST_REFUSED', status: 404, message: 'the agent does not serve this' },
  TIMEOUT: { code: 'TEST_TIMEOUT', status: 504, message: 'the agent did not answer in time' },
  TUNNEL_LOST: { code: 'TEST_TUNNEL_LOST', status: 502, message: 'the tunnel to the agent was lost' },
  FAILED: { code: 'TEST_FAILED', status: 500, message: 'the request failed' },
  TOO_LARGE: { code: 'TEST_TOO_LARGE', status: 413, message: 'request body exceeds the limit' },
  TOKEN_REVOKED: { code: 'TEST_TOKEN_REVOKED', status: 401, message: 'credentials not accepted' },
  AGENT_REVOKED: { code: 'TEST_AGENT_REVOKED', status: 403, message: 'the agent has been revoked' },
} as const;
export type TestName = keyof typeof TEST_ERRORS;

const FAILURES: FailureNames<TestName> = {
  NOT_CONNECTED: 'NOT_CONNECTED',
  REFUSED: 'REFUSED',
  TIMEOUT: 'TIMEOUT',
  TUNNEL_LOST: 'TUNNEL_LOST',
  FAILED: 'FAILED',
  TOO_LARGE: 'TOO_LARGE',
  TOKEN_REVOKED: 'TOKEN_REVOKED',
  AGENT_REVOKED: 'AGENT_REVOKED',
};

export interface TestTarget extends FrontTarget {
  caller: string;
}

/** What the test route saw: every report, and every response head. */
export interface RouteLog {
  reports: Array<ExchangeReport<TestTarget>>;
  heads: number;
}

export function testRoute(
  log: RouteLog,
  o: { upgrades?: boolean; deadlineCoversBody?: boolean } = {},
): ProxyRoute<TestTarget, TestName> {
  return {
    proxy: 'test',
    failures: FAILURES,
    answer: (f: Failure<TestName>) => statusAnswer(TEST_ERRORS[f.name], f.detail),
    screen: (req) => (req.method === 'TRACE' ? { name: 'SCREENED' } : undefined),
    screenUpgrade: () => (o.upgrades ? undefined : { name: 'NO_UPGRADES' }),
    async accept(req: IncomingMessage) {
      const caller = req.headers['x-caller'];
      const agent = String(req.headers['x-agent'] ?? 'agent-a');
      if (typeof caller !== 'string') return { ok: false, failure: { name: 'NO_CALLER' } };
      if (caller === 'mallory') return { ok: false, failure: { name: 'NOT_ALLOWED' }, target: { agent } };
      const jti = req.headers['x-jti'];
      const target: TestTarget = { agent, caller, ...(typeof jti === 'string' ? { jti } : {}) };
      return {
        ok: true,
        target,
        headers: forwardedHeaders(req, (h) => h === 'x-caller' || h === 'connection'),
      };
    },
    admit: (req) =>
      req.url === '/admit-refused' ? { name: 'NOT_ALLOWED', detail: 'not this path' } : undefined,
    head: (req, _t, headers, upgrade) => ({
      case: 'http',
      value: { method: req.method ?? 'GET', path: req.url ?? '/', headers, ...(upgrade ? { upgrade } : {}) },
    }),
    deadlineCoversBody: () => o.deadlineCoversBody ?? false,
    flushHead: () => true,
    stripResponse: (h) => h === 'set-cookie' || h === 'connection' || h === 'transfer-encoding',
    describe: (t) => ({ caller: t.caller }),
    headArrived: () => {
      log.heads++;
    },
    finished: (r) => {
      log.reports.push(r);
    },
  };
}

/** A requester and an agent over the in-memory link; `answer` plays the agent per stream. */
export function tunnelPair(answer: (s: LogicalStream) => void) {
  const link = createMemoryLink();
  const opened: Open[] = [];
  const requester = new Multiplexer({ sink: link.a, idParity: 'odd' });
  const agent = new Multiplexer({
    sink: link.b,
    idParity: 'even',
    onStream: (s) => {
      opened.push(s.open);
      answer(s);
    },
  });
  link.connect(
    (f) => requester.receive(f),
    (f) => agent.receive(f),
  );
  // The agent's own deadline off (an agent too old to enforce one): only the front's ends a request.
  const router: StreamOpener = {
    open: (name, { deadline: _d, routeOnly: _r, ...init }) =>
      requester.open({ ...init, agent: name, timeoutMs: 0 }),
  };
  return { router, opened, close: () => link.close() };
}
