import { defineErrors, errorClass } from '@pullplane/errors';

export const BusErrors = defineErrors('@pullplane/bus', {
  CONNECT_FAILED: { code: 'BUS_CONNECT_FAILED', status: 503, message: 'NATS could not be reached' },
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
