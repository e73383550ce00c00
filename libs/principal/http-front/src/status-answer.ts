import { STATUS_CODES } from 'node:http';
import type { ErrorSpec } from '@pullplane/errors';

/** A catalog entry a front answers with; `reason` overrides the Status reason of its HTTP status. */
export interface FrontErrorSpec extends ErrorSpec {
  readonly reason?: string;
}

/** A refusal or failure by its catalog name, with what the caller should read about it. */
export interface Failure<N extends string = string> {
  name: N;
  detail?: string;
}

/** An HTTP answer the front writes itself. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The Status `reason` Kubernetes gives each HTTP status a front answers with. */
const STATUS_REASON: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  413: 'RequestEntityTooLarge',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/**
 * The one Kubernetes Status a front answers with: the catalog entry's status and reason, its
 * message (with the detail after it), and its stable code as the cause, so Argo CD, kubectl
 * and an operator's search all read the same thing whichever proxy refused.
 */
export function statusAnswer(
  spec: FrontErrorSpec,
  detail?: string,
  headers: Record<string, string> = {},
): Answer {
  const message =
    detail && !detail.startsWith(spec.message) ? `${spec.message}: ${detail}` : (detail ?? spec.message);
  const body = JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: spec.reason ?? STATUS_REASON[spec.status] ?? 'InternalError',
    details: { causes: [{ reason: spec.code }] },
    code: spec.status,
  });
  return {
    status: spec.status,
    body,
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      ...headers,
    },
  };
}

/** The reason phrase of a status line. */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Status';
}

/** An answer as raw bytes for a socket no HTTP response object owns (a refused upgrade); the connection closes after it. */
export function answerText(a: Answer): string {
  const lines = Object.entries({ ...a.headers, connection: 'close' }).map(([k, v]) => `${k}: ${v}\r\n`);
  return `HTTP/1.1 ${a.status} ${reasonPhrase(a.status)}\r\n${lines.join('')}\r\n${a.body}`;
}
