import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { errors, StatusError } from './status.js';

/** The largest request body the real API server accepts (3 MiB). */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) {
      throw new StatusError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728');
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Decodes a create/update body: JSON or YAML (no Content-Type means JSON, as on the real server);
 * protobuf, wildcards and anything else are refused with 415. `lenient` also takes `*\/*` as JSON.
 */
export function decodeObjectBody(contentType: string | undefined, body: string, lenient = false): unknown {
  const type = mediaType(contentType);
  const known = type === '' || type === 'application/json' || type === 'application/yaml';
  if (!known && !(lenient && type === '*/*')) {
    throw errors.unsupportedMediaType(type, ['application/json', 'application/yaml']);
  }
  if (body.trim() === '') throw errors.badRequest('the request body is empty');
  try {
    return type === 'application/yaml' ? parseYaml(body) : JSON.parse(body);
  } catch (err) {
    throw errors.badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
}

interface AcceptEntry {
  type: string;
  params: Record<string, string>;
}

export function parseAccept(header: string | undefined): AcceptEntry[] {
  if (!header) return [];
  return header.split(',').map((entry) => {
    const [type = '', ...rest] = entry.split(';').map((s) => s.trim());
    const params: Record<string, string> = {};
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).toLowerCase()] = p.slice(eq + 1);
    }
    return { type: type.toLowerCase(), params };
  });
}

/** `meta.k8s.io/v1` or `v1beta1` when the client asked for server-side printing, else undefined. */
export function tableVersion(accept: string | undefined): string | undefined {
  const entry = parseAccept(accept).find((e) => e.params.as === 'Table' && e.params.g === 'meta.k8s.io');
  return entry ? `meta.k8s.io/${entry.params.v ?? 'v1'}` : undefined;
}

/** Which aggregated discovery version the client asked for, if any. */
export function aggregatedDiscoveryVersion(accept: string | undefined): 'v2' | 'v2beta1' | undefined {
  for (const e of parseAccept(accept)) {
    if (e.params.as === 'APIGroupDiscoveryList' && e.params.g === 'apidiscovery.k8s.io') {
      if (e.params.v === 'v2' || e.params.v === 'v2beta1') return e.params.v;
    }
  }
  return undefined;
}

export type ResponseFormat = 'json' | 'yaml';

const formats = new WeakMap<ServerResponse, ResponseFormat>();

/** Remembers the encoding negotiated from `Accept` for sendJson to honour (JSON unless set). */
export function setResponseFormat(res: ServerResponse, format: ResponseFormat): void {
  formats.set(res, format);
}

export function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  contentTypeIn = 'application/json',
): void {
  const yaml = contentTypeIn === 'application/json' && formats.get(res) === 'yaml';
  const payload = yaml ? toYaml(body) : JSON.stringify(body);
  const contentType = yaml ? 'application/yaml' : contentTypeIn;
  res.writeHead(code, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(payload),
    'Cache-Control': 'no-cache, private',
  });
  res.end(payload);
}

export function sendStatus(res: ServerResponse, err: StatusError): void {
  sendJson(res, err.code, err.toStatus());
}

/** First value of each query parameter (what the server reads for scalar options). */
export function firstValues(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of params) if (!(k in out)) out[k] = v;
  return out;
}

export function parseBoolParam(value: string | null): boolean {
  return value === 'true' || value === '1';
}

export function parseIntParam(name: string, value: string | null): number | undefined {
  if (value === null || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw errors.badRequest(`invalid value for ${name}: ${value}`);
  return n;
}
