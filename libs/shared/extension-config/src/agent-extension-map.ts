import { parse as parseYaml } from 'yaml';
import {
  type BackendOptions,
  DEFAULT_BACKEND_OPTIONS,
  isExtensionName,
  isRecord,
  parseBackendOptions,
} from './backend-options.js';

/** A header the agent adds to every request for one extension. */
export type ExtensionHeader =
  | { name: string; value: string }
  /** `value: $key` in the map: the value is key `secretKey` of the agent's extensions Secret. */
  | { name: string; secretKey: string };

/** One extension the agent serves: a name the principal may ask for, and where it really goes. */
export interface AgentExtension {
  name: string;
  /** The in-cluster base URL (http or https); request paths are appended to its path. */
  url: URL;
  headers: ExtensionHeader[];
  backend: BackendOptions;
}

export interface AgentExtensionMap {
  extensions: Map<string, AgentExtension>;
  /** Everything wrong with the document; entries with problems are left out, the rest kept. */
  problems: string[];
}

/**
 * Header names a configured header may not set: the ones Argo CD vouches for (the backend
 * trusts them), and the ones that describe the connection rather than the request.
 */
export function isReservedHeaderName(name: string): boolean {
  const l = name.toLowerCase();
  return (
    l.startsWith('argocd-') ||
    [
      'host',
      'connection',
      'keep-alive',
      'proxy-connection',
      'te',
      'trailer',
      'transfer-encoding',
      'upgrade',
      'content-length',
    ].includes(l)
  );
}

/** RFC 9110 token characters: a header name that Node would refuse is refused here first. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const HEADER_VALUE_BAD = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * Reads the agent's extension map:
 *
 * ```yaml
 * extensions:
 *   - name: metrics
 *     url: http://grafana.monitoring.svc:3000/
 *     headers:
 *       - name: Authorization
 *         value: $grafana.token        # key of the agent's extensions Secret
 *     backend:
 *       connectionTimeout: 2s
 * ```
 *
 * The shape follows Argo CD's `extension.config`, one URL per extension (this cluster's).
 * An empty document is an empty map.
 */
export function parseAgentExtensionMap(text: string): AgentExtensionMap {
  const problems: string[] = [];
  const extensions = new Map<string, AgentExtension>();
  let doc: unknown;
  try {
    doc = parseYaml(text, { uniqueKeys: true });
  } catch (err) {
    return { extensions, problems: [`not valid YAML: ${(err as Error).message.split('\n')[0]}`] };
  }
  if (doc === null || doc === undefined) return { extensions, problems };
  if (!isRecord(doc)) return { extensions, problems: ['the document must be a mapping with `extensions:`'] };
  for (const key of Object.keys(doc)) if (key !== 'extensions') problems.push(`${key}: unknown key`);
  const list = doc.extensions ?? [];
  if (!Array.isArray(list)) return { extensions, problems: [...problems, 'extensions: must be a list'] };
  list.forEach((entry: unknown, i) => {
    const at = `extensions[${i}]`;
    const before = problems.length;
    const ext = parseEntry(entry, at, problems);
    if (!ext || problems.length > before) return;
    if (extensions.has(ext.name)) {
      problems.push(`${at}.name: ${ext.name} is defined twice; the first one is kept`);
      return;
    }
    extensions.set(ext.name, ext);
  });
  return { extensions, problems };
}

function parseEntry(entry: unknown, at: string, problems: string[]): AgentExtension | undefined {
  if (!isRecord(entry)) {
    problems.push(`${at}: must be a mapping`);
    return undefined;
  }
  for (const key of Object.keys(entry))
    if (!['name', 'url', 'headers', 'backend'].includes(key)) problems.push(`${at}.${key}: unknown key`);
  const { name } = entry;
  if (!isExtensionName(name)) {
    problems.push(`${at}.name: must match ^[A-Za-z0-9-_]+$`);
    return undefined;
  }
  const where = `${at} (${name})`;
  let url: URL | undefined;
  if (typeof entry.url !== 'string') problems.push(`${where}.url: required`);
  else {
    try {
      url = new URL(entry.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        problems.push(`${where}.url: must be http or https`);
      else if (url.username || url.password)
        problems.push(`${where}.url: credentials belong in headers (from the Secret), not in the URL`);
      else if (url.search || url.hash) problems.push(`${where}.url: must not have a query or fragment`);
    } catch {
      problems.push(`${where}.url: not a URL: ${entry.url}`);
    }
  }
  const headers = parseHeaders(entry.headers, `${where}.headers`, problems);
  const backend = parseBackendOptions(entry.backend, `${where}.backend`, problems);
  if (!url) return undefined;
  return { name, url, headers, backend: backend ?? { ...DEFAULT_BACKEND_OPTIONS } };
}

export function parseHeaders(raw: unknown, at: string, problems: string[]): ExtensionHeader[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    problems.push(`${at}: must be a list of {name, value}`);
    return [];
  }
  const out: ExtensionHeader[] = [];
  raw.forEach((h: unknown, i) => {
    const hat = `${at}[${i}]`;
    if (!isRecord(h) || typeof h.name !== 'string' || typeof h.value !== 'string') {
      problems.push(`${hat}: needs a name and a value (strings)`);
      return;
    }
    if (!HEADER_NAME.test(h.name)) problems.push(`${hat}.name: not a valid header name`);
    else if (isReservedHeaderName(h.name)) problems.push(`${hat}.name: ${h.name} is reserved`);
    else if (h.value.startsWith('$')) {
      const key = h.value.slice(1);
      if (!/^[-._a-zA-Z0-9]+$/.test(key)) problems.push(`${hat}.value: ${h.value} is not a Secret key`);
      else out.push({ name: h.name, secretKey: key });
    } else if (HEADER_VALUE_BAD.test(h.value)) problems.push(`${hat}.value: control characters`);
    else out.push({ name: h.name, value: h.value });
  });
  return out;
}
