import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { StatusError } from '../status.js';

/**
 * An HTTP response written straight onto an upgrade request's socket (Node hands upgrade
 * requests over without a ServerResponse), then the connection closes.
 */
export function writeRawResponse(
  socket: Duplex,
  code: number,
  headers: Record<string, string | string[]>,
  body: string,
): void {
  if (socket.destroyed || !socket.writable) return;
  const lines = [`HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Unknown'}`];
  const all: Record<string, string | string[]> = {
    ...headers,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  };
  for (const [name, value] of Object.entries(all)) {
    for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  }
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** A Status object answer, as the API server gives before any upgrade happened. */
export function writeStatusResponse(socket: Duplex, err: StatusError): void {
  writeRawResponse(
    socket,
    err.code,
    { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' },
    JSON.stringify(err.toStatus()),
  );
}

/** A plain-text answer, as the kubelet's `http.Error` gives (passed through by the API server). */
export function writeTextResponse(
  socket: Duplex,
  code: number,
  text: string,
  headers: Record<string, string | string[]> = {},
): void {
  writeRawResponse(
    socket,
    code,
    { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', ...headers },
    `${text}\n`,
  );
}
