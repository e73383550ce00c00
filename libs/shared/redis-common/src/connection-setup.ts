import { encodeCommand } from '@pullplane/resp';
import type { RedisEndpoint } from './redis-socket.js';

/** The state a fresh connection is put in before any forwarded command runs on it. */
export interface ConnectionState {
  protocol: 2 | 3;
  /** SELECT, when not 0. */
  db?: number;
  /** CLIENT SETNAME. */
  name?: Buffer | string | undefined;
}

/**
 * The commands that set a fresh connection up, in order: AUTH (with the endpoint's password)
 * first, so HELLO and the rest run authenticated. They are written ahead of the first command
 * without waiting for their replies, which the caller drops (logging refusals).
 */
export function setupCommands(
  endpoint: RedisEndpoint,
  state: ConnectionState,
): Array<{ command: Buffer; what: string }> {
  const out: Array<{ command: Buffer; what: string }> = [];
  if (endpoint.password) out.push({ command: encodeCommand(['AUTH', endpoint.password]), what: 'AUTH' });
  if (state.protocol === 3) out.push({ command: encodeCommand(['HELLO', '3']), what: 'HELLO' });
  if (state.db !== undefined && state.db !== 0)
    out.push({ command: encodeCommand(['SELECT', String(state.db)]), what: 'SELECT' });
  if (state.name !== undefined && state.name.length > 0)
    out.push({ command: encodeCommand(['CLIENT', 'SETNAME', state.name]), what: 'CLIENT SETNAME' });
  return out;
}
