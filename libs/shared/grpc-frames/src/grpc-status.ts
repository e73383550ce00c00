import { status } from '@grpc/grpc-js';

/** The status a call ended with, as a gRPC client reports it. */
export interface CallStatus {
  code: status;
  details: string;
}

/** A grpc-message value: UTF-8, percent-encoded outside printable ASCII and for '%', as gRPC asks. */
export function grpcMessageValue(details: string): string {
  let out = '';
  for (const b of Buffer.from(details, 'utf8'))
    out +=
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

/** A received grpc-message value decoded; a malformed escape is kept as it came. */
export function grpcMessageText(value: string | undefined): string {
  if (!value) return '';
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The status of a response that is not gRPC's (a proxy's error page, a 404), as gRPC maps HTTP statuses. */
export function statusOfHttp(httpStatus: number): status {
  switch (httpStatus) {
    case 400:
      return status.INTERNAL;
    case 401:
      return status.UNAUTHENTICATED;
    case 403:
      return status.PERMISSION_DENIED;
    case 404:
      return status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return status.UNAVAILABLE;
    default:
      return status.UNKNOWN;
  }
}

/** The status in a response's headers or trailers, or undefined when they carry none. */
export function statusOfHeaders(headers: Record<string, unknown>): CallStatus | undefined {
  const raw = headers['grpc-status'];
  if (raw === undefined) return undefined;
  const code = Number(raw);
  const message = headers['grpc-message'];
  return {
    code: Number.isInteger(code) && code >= 0 && code <= 16 ? code : status.UNKNOWN,
    details: grpcMessageText(typeof message === 'string' ? message : undefined),
  };
}
