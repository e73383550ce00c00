import { connect } from 'node:net';
import { encodeCommand, joinRaw, ValueSlicer } from '@pullplane/resp';

/**
 * What redis-server itself writes for `commands` on a plain socket, after AUTH (when a
 * password is given) and HELLO 3 (for RESP3): the bytes a pass-through must reproduce.
 */
export function redisWireReplies(
  server: { host: string; port: number; password?: string },
  protocol: 2 | 3,
  commands: Array<Array<string | Buffer>>,
): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.host, port: server.port });
    const setup = [
      ...(server.password === undefined ? [] : [encodeCommand(['AUTH', server.password])]),
      ...(protocol === 3 ? [encodeCommand(['HELLO', '3'])] : []),
    ];
    const out: Buffer[] = [];
    let seen = 0;
    const slicer = new ValueSlicer({
      onValue: (_v, raw) => {
        if (++seen > setup.length) out.push(joinRaw(raw));
        if (out.length === commands.length) {
          socket.destroy();
          resolve(out);
        }
      },
      onError: reject,
    });
    socket.on('data', (chunk: Buffer) => slicer.push(chunk));
    socket.on('error', reject);
    socket.write(Buffer.concat([...setup, ...commands.map((c) => encodeCommand(c))]));
  });
}
