import { parse as parseYaml } from 'yaml';
import { type ExtensionHeader, parseHeaders } from './agent-extension-map.js';
import { type BackendOptions, isExtensionName, isRecord, parseBackendOptions } from './backend-options.js';

/** One backend service of an Argo CD proxy extension. */
export interface ArgocdExtensionService {
  url: string;
  headers: ExtensionHeader[];
  cluster?: { name?: string; server?: string };
}

export interface ArgocdExtension {
  name: string;
  backend: BackendOptions;
  services: ArgocdExtensionService[];
  /** The argocd-cm key it came from (`extension.config` or `extension.config.<name>`). */
  source: string;
}

export interface ArgocdExtensionConfig {
  extensions: ArgocdExtension[];
  problems: string[];
}

const SINGLE_KEY = 'extension.config';
const PER_EXTENSION_PREFIX = 'extension.config.';

/**
 * Reads proxy extensions from `argocd-cm` data as Argo CD does: the single key
 * `extension.config` (`extensions:` list of `{name, backend: {…, services}}`) and the
 * per-extension keys `extension.config.<name>` (the backend block itself). A name defined in
 * both is a problem; Argo CD refuses such a configuration too.
 */
export function parseArgocdExtensionConfig(data: Readonly<Record<string, string>>): ArgocdExtensionConfig {
  const problems: string[] = [];
  const extensions: ArgocdExtension[] = [];
  const seen = new Map<string, string>();
  const add = (ext: ArgocdExtension) => {
    const prev = seen.get(ext.name);
    if (prev) {
      problems.push(`${ext.source}: extension ${ext.name} is already defined in ${prev}`);
      return;
    }
    seen.set(ext.name, ext.source);
    extensions.push(ext);
  };
  const single = data[SINGLE_KEY];
  if (single !== undefined) {
    const doc = yamlDoc(single, SINGLE_KEY, problems);
    if (isRecord(doc)) {
      const list = doc.extensions;
      if (!Array.isArray(list)) problems.push(`${SINGLE_KEY}: extensions must be a list`);
      else
        list.forEach((entry: unknown, i) => {
          const at = `${SINGLE_KEY}: extensions[${i}]`;
          if (!isRecord(entry) || !isExtensionName(entry.name)) {
            problems.push(`${at}.name: must match ^[A-Za-z0-9-_]+$`);
            return;
          }
          const ext = parseBackend(
            entry.name,
            entry.backend,
            `${at} (${entry.name}).backend`,
            SINGLE_KEY,
            problems,
          );
          if (ext) add(ext);
        });
    } else if (doc !== undefined) problems.push(`${SINGLE_KEY}: must be a mapping with extensions:`);
  }
  for (const key of Object.keys(data).sort()) {
    if (!key.startsWith(PER_EXTENSION_PREFIX)) continue;
    const name = key.slice(PER_EXTENSION_PREFIX.length);
    if (!isExtensionName(name)) {
      problems.push(`${key}: the extension name must match ^[A-Za-z0-9-_]+$`);
      continue;
    }
    const doc = yamlDoc(data[key]!, key, problems);
    if (doc === undefined) continue;
    const ext = parseBackend(name, doc, key, key, problems);
    if (ext) add(ext);
  }
  return { extensions, problems };
}

function yamlDoc(text: string, key: string, problems: string[]): unknown {
  try {
    return parseYaml(text, { uniqueKeys: true }) ?? undefined;
  } catch (err) {
    problems.push(`${key}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
}

function parseBackend(
  name: string,
  raw: unknown,
  at: string,
  source: string,
  problems: string[],
): ArgocdExtension | undefined {
  if (!isRecord(raw)) {
    problems.push(`${at}: must be a mapping with services:`);
    return undefined;
  }
  const before = problems.length;
  const backend = parseBackendOptions(raw, at, problems, ['services']);
  const list = raw.services;
  if (!Array.isArray(list) || list.length === 0) {
    problems.push(`${at}.services: at least one service is required`);
    return undefined;
  }
  const services: ArgocdExtensionService[] = [];
  list.forEach((s: unknown, i) => {
    const sat = `${at}.services[${i}]`;
    if (!isRecord(s) || typeof s.url !== 'string' || s.url === '') {
      problems.push(`${sat}.url: required`);
      return;
    }
    for (const key of Object.keys(s))
      if (!['url', 'headers', 'cluster'].includes(key)) problems.push(`${sat}.${key}: unknown key`);
    const svc: ArgocdExtensionService = {
      url: s.url,
      headers: parseHeaders(s.headers, `${sat}.headers`, problems),
    };
    if (s.cluster !== undefined) {
      if (!isRecord(s.cluster)) problems.push(`${sat}.cluster: must be a mapping with name and/or server`);
      else {
        const c: { name?: string; server?: string } = {};
        if (typeof s.cluster.name === 'string' && s.cluster.name) c.name = s.cluster.name;
        if (typeof s.cluster.server === 'string' && s.cluster.server) c.server = s.cluster.server;
        svc.cluster = c;
      }
    }
    services.push(svc);
  });
  if (services.length > 1) {
    services.forEach((svc, i) => {
      if (!svc.cluster?.name && !svc.cluster?.server)
        problems.push(
          `${at}.services[${i}]: with several services each needs cluster.name or cluster.server`,
        );
    });
  }
  if (problems.length > before) return undefined;
  return { name, backend, services, source };
}
