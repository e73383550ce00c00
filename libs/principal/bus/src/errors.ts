import { defineErrors, errorClass } from '@pullplane/errors';

export const BusErrors = defineErrors('@pullplane/bus', {
  CONNECT_FAILED: {
    code: 'BUS_CONNECT_FAILED',
    status: 503,
    message: 'NATS could not be reached, or TLS to it failed',
  },
  AUTH_REFUSED: {
    code: 'BUS_AUTH_REFUSED',
    status: 503,
    message: "NATS refused the connection's credentials (or demanded some and none were given)",
  },
  CREDENTIALS_INVALID: {
    code: 'BUS_CREDENTIALS_INVALID',
    status: 500,
    message: 'a NATS credential or TLS file is missing, unreadable or malformed',
  },
  NO_CREDENTIALS: {
    code: 'BUS_NO_CREDENTIALS',
    status: 500,
    message: 'no NATS credentials are configured and --nats-insecure does not allow going without',
  },
  PERMISSION_DENIED: {
    code: 'BUS_PERMISSION_DENIED',
    status: 403,
    message: "NATS denied the operation to this connection's identity (its role's permissions)",
  },
  INVALID_RECORD: {
    code: 'BUS_INVALID_RECORD',
    status: 500,
    message: 'a presence record on the bus is malformed',
  },
  CLOSED: { code: 'BUS_CLOSED', status: 503, message: 'the bus connection is closed' },
});
export const BusErrorCode = BusErrors.codes;
export type BusErrorCode = (typeof BusErrorCode)[keyof typeof BusErrorCode];

export class BusError extends errorClass(BusErrors) {}
