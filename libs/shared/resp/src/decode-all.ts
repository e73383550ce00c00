import { RespDecoder } from './decoder.js';
import type { RespDecoderLimits } from './decoder-options.js';
import { RespError, RespErrorCode } from './errors.js';
import type { RespValue } from './types.js';

/**
 * Decodes a complete buffer into its values. Throws the RespError a streaming decoder would
 * report, or RESP_INCOMPLETE when the input ends inside a value.
 */
export function decodeAll(input: Buffer, options: RespDecoderLimits = {}): RespValue[] {
  const values: RespValue[] = [];
  let failure: RespError | undefined;
  const decoder = new RespDecoder({
    ...options,
    onValue: (value) => values.push(value),
    onError: (error) => {
      failure = error;
    },
  });
  decoder.push(input);
  if (failure !== undefined) throw failure;
  if (decoder.pending) throw new RespError(RespErrorCode.INCOMPLETE, 'Protocol error: incomplete value');
  return values;
}
