import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TokenAuthority } from '@pullplane/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli } from '../src/program.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cli-extensions-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(...argv: string[]) {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};

const ARGOCD_CM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
data:
  extension.config: |
    extensions:
    - name: metrics
      backend:
        services:
        - url: http://argocd-agent-extension-proxy:8090/metrics
  extension.config.cost: |
    services:
    - url: http://cost.example:8080
`;

describe('pullplane extensions list', () => {
  it("puts argocd-cm next to each agent's map (file or ConfigMap) and names what does not line up", async () => {
    const cm = file('argocd-cm.yaml', ARGOCD_CM);
    const a = file(
      'a.yaml',
      'extensions:\n  - name: metrics\n    url: http://grafana.monitoring.svc:3000/\n  - name: logs\n    url: http://loki.logging.svc:3100/\n',
    );
    const b = file(
      'b.yaml',
      `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: pullplane-agent-extensions }\ndata:\n  extensions.yaml: |\n    extensions:\n      - name: metrics\n        url: http://prometheus.monitoring.svc:9090/\n`,
    );
    const r = await cli(
      'extensions',
      'list',
      '--argocd-cm',
      cm,
      '--agent-map',
      `agent-a=${a}`,
      '--agent-map',
      `agent-b=${b}`,
      '--output',
      'yaml',
    );
    expect(r.code).toBe(0);
    const report = parse(r.out) as {
      extensions: Array<{
        extension: string;
        servedBy: Record<string, string>;
        missingOn: string[];
        argocd?: { viaExtensionProxy: boolean };
      }>;
      problems: string[];
    };
    const by = Object.fromEntries(report.extensions.map((e) => [e.extension, e]));
    expect(by.metrics).toMatchObject({
      argocd: { viaExtensionProxy: true },
      servedBy: {
        'agent-a': 'http://grafana.monitoring.svc:3000/',
        'agent-b': 'http://prometheus.monitoring.svc:9090/',
      },
      missingOn: [],
    });
    expect(by.logs).toMatchObject({
      servedBy: { 'agent-a': 'http://loki.logging.svc:3100/' },
      missingOn: ['agent-b'],
    });
    expect(by.logs!.argocd).toBeUndefined();
    expect(by.cost).toMatchObject({
      argocd: { viaExtensionProxy: false },
      servedBy: {},
      missingOn: ['agent-a', 'agent-b'],
    });
    expect(report.problems).toEqual([
      'argocd-cm: extension cost does not go through the extension proxy (one service whose URL ends in /cost)',
      'extension logs is served by agent-a but Argo CD has no extension.config for it',
    ]);
    const table = await cli(
      'extensions',
      'list',
      '--argocd-cm',
      cm,
      '--agent-map',
      `agent-a=${a}`,
      '--agent-map',
      `agent-b=${b}`,
    );
    expect(table.out).toContain(
      'metrics    via extension proxy  agent-b  http://prometheus.monitoring.svc:9090/',
    );
    expect(table.out).toContain('logs       not configured       agent-b  (not served: 404)');
  });

  it('refuses bad arguments with a usage error', async () => {
    expect((await cli('extensions', 'list')).code).not.toBe(0);
    expect((await cli('extensions', 'list', '--agent-map', 'no-equals')).code).not.toBe(0);
    expect((await cli('extensions', 'list', '--agent-map', `Bad_Name=${file('x.yaml', '')}`)).code).not.toBe(
      0,
    );
  });
});

describe('pullplane extensions token', () => {
  it('issues a token the extension proxy verifies, for the Argo CD server by default', async () => {
    const authority = await TokenAuthority.generate({ audience: 'extension-proxy' });
    const key = file('token.key', authority.exportPrivateKeyPem());
    const r = await cli('extensions', 'token', '--token-key-path', key, '--ttl', '3600', '--output', 'json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out) as { header: string; subject: string; expiresAt: string };
    expect(out.subject).toBe('argocd-server');
    const verified = await authority.verify(out.header.replace(/^Bearer /, ''));
    expect(verified.agent).toBe('argocd-server');
    // A token for the resource proxy is not one for the extension proxy.
    const other = await TokenAuthority.fromPem(authority.exportPrivateKeyPem(), {
      audience: 'resource-proxy',
    });
    await expect(other.verify(out.header.replace(/^Bearer /, ''))).rejects.toThrow();
  });
});
