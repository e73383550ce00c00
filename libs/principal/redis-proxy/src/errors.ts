import { defineErrors, errorClass } from '@pullplane/errors';

/**
 * Every error the redis proxy itself answers, in one place: clients (and operators grepping
 * logs) see exactly these texts. Redis' own wording is kept where Redis has one.
 */
export const ReplyText = {
  noAuth: 'NOAUTH Authentication required.',
  helloNoAuth:
    'NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time',
  wrongPass: 'WRONGPASS invalid username-password pair or user is disabled.',
  noPasswordConfigured:
    'ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?',
  noProto: 'NOPROTO unsupported protocol version',
  authTimeout: (ms: number) =>
    `ERR authentication timed out: a connection must authenticate within ${ms} ms (--unauthenticated-timeout)`,
  syntax: 'ERR syntax error',
  arity: (name: string) => `ERR wrong number of arguments for '${name}' command`,
  notInteger: 'ERR value is not an integer or out of range',
  badClientName: 'ERR Client names cannot contain spaces, newlines or special characters.',
  subscribeContext: (name: string) =>
    `ERR Can't execute '${name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context`,
  execAbort: 'EXECABORT Transaction discarded because of previous errors.',
  notSupported: (what: string) => `ERR ${what} is not supported through the pullplane redis proxy`,
  notAllowed: (command: string) =>
    `ERR command '${command}' is not allowed through the pullplane redis proxy (an operator can allow it with --allow-commands)`,

  // Agent keys.
  notConnected: (agent: string) => `ERR agent ${agent} is not connected`,
  unreachable: (agent: string, detail: string) => `ERR agent ${agent} is unreachable: ${detail}`,
  refused: (agent: string, detail: string) => `ERR agent ${agent} refused the request: ${detail}`,
  timeout: (agent: string, ms: number) => `ERR agent ${agent} did not answer within ${ms} ms`,
  agentFailed: (agent: string, detail: string) => `ERR agent ${agent} failed: ${detail}`,
  badAgentReply: (agent: string) => `ERR agent ${agent} sent a malformed reply`,
  replyTooLarge: (agent: string, max: number) => `ERR agent ${agent} reply exceeds ${max} bytes`,
  unsupportedForAgentKey: (name: string) => `ERR unsupported command for agent key: '${name}'`,
  spansAgentKey: (name: string, served: readonly string[]) =>
    `ERR '${name}' cannot be used with agent keys: agent keys are served one command at a time (${served.join(', ')})`,
  agentKeyInMulti: (name: string) =>
    `ERR '${name}' on an agent key cannot be queued in MULTI: transactions run on the principal Redis only`,
  invalidAgentKey: (reason: string) => `ERR invalid agent key: ${reason}`,

  // Principal Redis.
  principalUnavailable: (detail: string) => `ERR principal redis unavailable: ${detail}`,
} as const;

/**
 * Stable codes for configuration and lifecycle failures of the proxy. Client replies are Redis
 * error replies (`ReplyText` above), worded as Redis words them, not codes.
 */
export const RedisProxyErrors = defineErrors('@pullplane/redis-proxy', {
  INVALID_KEY_PREFIX: {
    code: 'REDIS_PROXY_INVALID_KEY_PREFIX',
    status: 500,
    message: 'an agent key prefix breaks the key naming rule',
  },
  NOT_LISTENING: {
    code: 'REDIS_PROXY_NOT_LISTENING',
    status: 500,
    message: 'the proxy was used before it listened',
  },
});
export const RedisProxyErrorCode = RedisProxyErrors.codes;
export type RedisProxyErrorCode = (typeof RedisProxyErrorCode)[keyof typeof RedisProxyErrorCode];

export class RedisProxyError extends errorClass(RedisProxyErrors) {}
