import { readFile } from 'node:fs/promises';
import { TokenAuthority } from '@pullplane/auth';
import { parseAgentExtensionMap, parseArgocdExtensionConfig } from '@pullplane/extension-config';
import { isDnsLabel } from '@pullplane/names';
import { parseAllDocuments } from 'yaml';
import { UsageError } from './errors.js';

/** What `pullplane extensions list` reports for one extension Argo CD knows or an agent serves. */
export interface ExtensionRow {
  extension: string;
  /** Where Argo CD sends it (extension.config), if it knows it at all. */
  argocd?: { source: string; urls: string[]; viaExtensionProxy: boolean };
  /** Agent → the in-cluster URL it maps the extension to. */
  servedBy: Record<string, string>;
  /** Agents whose map does not name it. */
  missingOn: string[];
}

export interface ExtensionsReport {
  extensions: ExtensionRow[];
  problems: string[];
}

/**
 * The data of a ConfigMap from a manifest file (`kubectl get cm <name> -o yaml`, or a file with
 * several documents, where the one named `name` counts); a file that is no manifest is the
 * agent-map YAML itself.
 */
function configMapData(
  text: string,
  name: string | undefined,
  file: string,
): Record<string, string> | undefined {
  const docs = parseAllDocuments(text).map((d) => d.toJS() as unknown);
  for (const doc of docs) {
    const d = doc as { kind?: string; metadata?: { name?: string }; data?: Record<string, string> };
    if (d?.kind === 'ConfigMap' && (!name || d.metadata?.name === name)) return d.data ?? {};
    if (d?.kind === 'List')
      for (const item of (doc as { items?: unknown[] }).items ?? []) {
        const i = item as typeof d;
        if (i?.kind === 'ConfigMap' && (!name || i.metadata?.name === name)) return i.data ?? {};
      }
  }
  if (name) throw new UsageError(`${file}: no ConfigMap ${name} in it`);
  return undefined;
}

/**
 * Which agents serve which extension: Argo CD's `extension.config` (from argocd-cm) next to
 * each agent's extension map (a file, or the agent's ConfigMap with the map under `key`).
 */
export async function extensionsList(o: {
  argocdCm?: string;
  agentMaps: string[];
  mapKey: string;
}): Promise<ExtensionsReport> {
  const problems: string[] = [];
  const rows = new Map<string, ExtensionRow>();
  const row = (name: string) => {
    let r = rows.get(name);
    if (!r) {
      r = { extension: name, servedBy: {}, missingOn: [] };
      rows.set(name, r);
    }
    return r;
  };
  if (o.argocdCm) {
    const data = configMapData(await readFile(o.argocdCm, 'utf8'), 'argocd-cm', o.argocdCm)!;
    const parsed = parseArgocdExtensionConfig(data);
    problems.push(...parsed.problems.map((p) => `argocd-cm: ${p}`));
    for (const ext of parsed.extensions) {
      const urls = ext.services.map((s) => s.url);
      const viaExtensionProxy = urls.every((u) => {
        try {
          return new URL(u).pathname.replace(/\/+$/, '') === `/${ext.name}` && urls.length === 1;
        } catch {
          return false;
        }
      });
      if (!viaExtensionProxy)
        problems.push(
          `argocd-cm: extension ${ext.name} does not go through the extension proxy (one service whose URL ends in /${ext.name})`,
        );
      row(ext.name).argocd = { source: ext.source, urls, viaExtensionProxy };
    }
  }
  const agents: string[] = [];
  for (const spec of o.agentMaps) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new UsageError(`--agent-map ${spec}: expected <agent>=<file>`);
    const agent = spec.slice(0, eq);
    const file = spec.slice(eq + 1);
    if (!isDnsLabel(agent)) throw new UsageError(`--agent-map ${spec}: "${agent}" is not an agent name`);
    agents.push(agent);
    const text = await readFile(file, 'utf8');
    const cm = configMapData(text, undefined, file);
    const mapText = cm ? cm[o.mapKey] : text;
    if (mapText === undefined) {
      problems.push(`${agent}: ${file} is a ConfigMap without the key ${o.mapKey}`);
      continue;
    }
    const parsed = parseAgentExtensionMap(mapText);
    problems.push(...parsed.problems.map((p) => `${agent}: ${p}`));
    for (const ext of parsed.extensions.values()) row(ext.name).servedBy[agent] = ext.url.href;
  }
  for (const r of rows.values()) {
    r.missingOn = agents.filter((a) => !(a in r.servedBy));
    if (!r.argocd && o.argocdCm)
      problems.push(
        `extension ${r.extension} is served by ${Object.keys(r.servedBy).join(', ')} but Argo CD has no extension.config for it`,
      );
  }
  return { extensions: [...rows.values()].sort((a, b) => a.extension.localeCompare(b.extension)), problems };
}

/** Plain-text table: one line per extension and agent. */
export function extensionsTable(report: ExtensionsReport): string {
  const lines: string[][] = [['EXTENSION', 'ARGO CD', 'AGENT', 'IN-CLUSTER URL']];
  for (const r of report.extensions) {
    const argocd = r.argocd
      ? r.argocd.viaExtensionProxy
        ? 'via extension proxy'
        : 'elsewhere'
      : 'not configured';
    const agents = Object.entries(r.servedBy);
    for (const [agent, url] of agents) lines.push([r.extension, argocd, agent, url]);
    for (const agent of r.missingOn) lines.push([r.extension, argocd, agent, '(not served: 404)']);
    if (agents.length === 0 && r.missingOn.length === 0) lines.push([r.extension, argocd, '-', '-']);
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  const out = lines
    .map((l) =>
      l
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
  const problems = report.problems.map((p) => `problem: ${p}`).join('\n');
  return `${out}\n${problems ? `\n${problems}\n` : ''}`;
}

/** A bearer token for the Argo CD server to present to the extension proxy (argocd-secret). */
export async function extensionsToken(o: {
  tokenKeyPath: string;
  subject: string;
  ttlSeconds?: number;
}): Promise<{ subject: string; jti: string; expiresAt?: string; header: string }> {
  const authority = await TokenAuthority.fromPem(await readFile(o.tokenKeyPath, 'utf8'), {
    audience: 'extension-proxy',
  });
  const token = await authority.issue(o.subject, o.ttlSeconds ? { ttlSeconds: o.ttlSeconds } : {});
  const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as {
    jti: string;
    exp?: number;
  };
  return {
    subject: o.subject,
    jti: claims.jti,
    ...(claims.exp ? { expiresAt: new Date(claims.exp * 1000).toISOString() } : {}),
    header: `Bearer ${token}`,
  };
}
