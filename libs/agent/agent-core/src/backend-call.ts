import type { Dispatcher } from 'undici';

/** Methods a request may be sent again with (no body, no effect): RFC 9110's safe methods. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A backend's answer as a call hands it over: the status and the headers as sent. */
export interface BackendResponse {
  status: number;
  /** Name, value, name, value… as received (node:http's rawHeaders). */
  rawHeaders: string[];
}

/** What a call tells its caller, in order: a response (or an error), its body, its end. */
export interface BackendCallHandler {
  onResponse(res: BackendResponse): void;
  /** A body chunk; false pauses the response until the call's `resume()`. */
  onData(chunk: Buffer): boolean;
  onEnd(): void;
  /** Before a response (it never came), or after one (its body broke off); also after `abort()`. */
  onError(err: Error, responded: boolean): void;
}

export interface BackendCall {
  /** Ends the call (the requester went away); onError follows unless it had ended. */
  abort(): void;
  /** Resumes a response paused by onData returning false. */
  resume(): void;
}

/** Anything undici can send a request through: a Pool, a Client, or a pool of our own. */
export type CallDispatcher = Pick<Dispatcher, 'dispatch'>;

export interface CallHooks {
  /** The response's status, before the handler hears of it. */
  onStatus?(status: number): void;
  /**
   * Given, a bodiless request whose kept-alive connection the server closed just as it went
   * out is sent once more (as Go's transport does), and this is told why. Only for requests
   * with no effect (safe methods).
   */
  onResend?(err: Error): void;
}

/**
 * Sends a request through undici's dispatcher and hands its response to `handler` as it
 * arrives. The dispatcher parses and frames without a request object, a response stream and
 * an agent's bookkeeping per call: about half node:http's client CPU per request. A streamed
 * `body` is read to its end and then destroyed: never pass one whose other side is still in use.
 * An `expect` header is dropped from `headers`: undici refuses one, and sends the body right
 * after the head, which a server must accept from a client that sent none (RFC 9110 §10.1.1).
 */
export function dispatchCall(
  dispatcher: CallDispatcher,
  request: {
    path: string;
    method: string;
    headers: Record<string, string | string[]>;
    body?: Dispatcher.DispatchOptions['body'];
  },
  handler: BackendCallHandler,
  hooks: CallHooks = {},
): BackendCall {
  let abortCall: ((err: Error) => void) | undefined;
  let aborted: Error | undefined;
  let resume: (() => void) | undefined;
  let responded = false;
  let resendable = hooks.onResend !== undefined && request.body == null;
  delete request.headers.expect;
  const send = () =>
    dispatcher.dispatch(
      {
        path: request.path,
        method: request.method as Dispatcher.HttpMethod,
        headers: request.headers,
        body: request.body ?? null,
        // Watches, followed logs and event streams are quiet for as long as they like; the
        // caller's deadline and its going away (abort) end a call.
        headersTimeout: 0,
        bodyTimeout: 0,
      },
      {
        onConnect(abort: (err?: Error) => void) {
          abortCall = abort;
          if (aborted) abort(aborted);
        },
        onHeaders(status: number, raw: Buffer[], resumeFn: () => void) {
          // 1xx informational answers are not the response.
          if (status < 200) return true;
          responded = true;
          resume = resumeFn;
          hooks.onStatus?.(status);
          const rawHeaders = new Array<string>(raw.length);
          for (let i = 0; i < raw.length; i++) rawHeaders[i] = raw[i]!.toString('latin1');
          handler.onResponse({ status, rawHeaders });
          return true;
        },
        onData: (chunk: Buffer) => handler.onData(chunk),
        onComplete: () => handler.onEnd(),
        onError: (err: Error) => {
          if (resendable && !responded && !aborted && isStaleConnection(err)) {
            resendable = false;
            hooks.onResend?.(err);
            send();
            return;
          }
          handler.onError(err, responded);
        },
      },
    );
  send();
  return {
    abort() {
      if (aborted) return;
      aborted = new Error('the requester went away');
      abortCall?.(aborted);
    },
    resume: () => resume?.(),
  };
}

/**
 * How a kept-alive connection the server closed under a request shows: reset, or closed
 * unanswered. A request with nothing to send again may be sent once more.
 */
export function isStaleConnection(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET';
}
