import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_BACKEND_OPTIONS, parseAgentExtensionMap, parseArgocdExtensionConfig } from '../src/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => readFileSync(path.join(here, 'fixtures', name), 'utf8');
const cmData = (name: string) => (parse(fixture(name)) as { data: Record<string, string> }).data;

describe("Argo CD's extension.config", () => {
  it('reads the single-key form with every documented field', () => {
    const { extensions, problems } = parseArgocdExtensionConfig(cmData('argocd-cm-single-key.yaml'));
    expect(problems).toEqual([]);
    expect(extensions.map((e) => e.name)).toEqual(['httpbin', 'metrics']);
    expect(extensions[0]).toEqual({
      name: 'httpbin',
      source: 'extension.config',
      backend: {
        connectionTimeoutMs: 2000,
        keepAliveMs: 15000,
        idleConnectionTimeoutMs: 60000,
        maxIdleConnections: 30,
      },
      services: [
        {
          url: 'http://httpbin.org',
          headers: [{ name: 'some-header', secretKey: 'some.argocd.secret.key' }],
          cluster: { name: 'some-cluster', server: 'https://some-cluster' },
        },
      ],
    });
    expect(extensions[1]!.backend).toEqual(DEFAULT_BACKEND_OPTIONS);
  });

  it('reads the per-extension form', () => {
    const { extensions, problems } = parseArgocdExtensionConfig(cmData('argocd-cm-per-extension.yaml'));
    expect(problems).toEqual([]);
    expect(extensions.map((e) => [e.name, e.source])).toEqual([
      ['cost', 'extension.config.cost'],
      ['metrics', 'extension.config.metrics'],
    ]);
    expect(extensions[1]!.backend.connectionTimeoutMs).toBe(5000);
    expect(extensions[0]!.services.map((s) => s.cluster)).toEqual([
      { name: 'agent-a' },
      { server: 'https://argocd-agent-resource-proxy:9090/clusters/agent-b' },
    ]);
  });

  it('reports every problem, keeping what is sound', () => {
    const { extensions, problems } = parseArgocdExtensionConfig({
      'extension.config': `extensions:
- name: ok
  backend:
    services: [{ url: "http://a" }]
- name: "bad name"
  backend: { services: [{ url: "http://b" }] }
- name: twins
  backend:
    connectionTimeout: soon
    services: [{ url: "http://c" }, { url: "http://d" }]
`,
      'extension.config.ok': 'services: [{ url: "http://again" }]',
      'extension.config.bad/name': 'services: [{ url: "http://x" }]',
      'extension.config.broken': 'services: [ {',
    });
    expect(extensions.map((e) => e.name)).toEqual(['ok']);
    expect(problems).toEqual([
      'extension.config: extensions[1].name: must match ^[A-Za-z0-9-_]+$',
      expect.stringContaining('extension.config: extensions[2] (twins).backend.connectionTimeout:'),
      'extension.config: extensions[2] (twins).backend.services[0]: with several services each needs cluster.name or cluster.server',
      'extension.config: extensions[2] (twins).backend.services[1]: with several services each needs cluster.name or cluster.server',
      'extension.config.bad/name: the extension name must match ^[A-Za-z0-9-_]+$',
      expect.stringMatching(/^extension\.config\.broken: not valid YAML/),
      'extension.config.ok: extension ok is already defined in extension.config',
    ]);
  });

  it('turns every truncation of the YAML into problems or a result, never a throw', () => {
    const data = cmData('argocd-cm-single-key.yaml');
    const whole = parseArgocdExtensionConfig(data);
    // Every truncation is either a clean parse or a reported problem, never a throw.
    const text = data['extension.config']!;
    for (let i = 0; i < text.length; i += 7) {
      const r = parseArgocdExtensionConfig({ 'extension.config': text.slice(0, i) });
      expect(Array.isArray(r.problems)).toBe(true);
    }
    expect(parseArgocdExtensionConfig(data)).toEqual(whole);
  });
});

describe("the agent's extension map", () => {
  it('reads names, URLs, literal and Secret headers, backend options', () => {
    const { extensions, problems } = parseAgentExtensionMap(fixture('agent-extensions.yaml'));
    expect(problems).toEqual([]);
    const metrics = extensions.get('metrics')!;
    expect(metrics.url.href).toBe('http://grafana.monitoring.svc:3000/');
    expect(metrics.headers).toEqual([
      { name: 'Authorization', secretKey: 'grafana.token' },
      { name: 'X-Scope-OrgID', value: 'tenant-1' },
    ]);
    expect(metrics.backend).toEqual({ ...DEFAULT_BACKEND_OPTIONS, connectionTimeoutMs: 1000 });
    expect(extensions.get('logs')!.url.pathname).toBe('/loki');
  });

  it.each([
    ['a name that is not a path segment', '- { name: "../x", url: "http://a" }', 'must match'],
    ['a non-HTTP URL', '- { name: a, url: "file:///etc/passwd" }', 'must be http or https'],
    ['credentials in the URL', '- { name: a, url: "http://u:p@a" }', 'credentials belong in headers'],
    ['a query in the URL', '- { name: a, url: "http://a/?x=1" }', 'query or fragment'],
    [
      'an Argocd-* header',
      '- { name: a, url: "http://a", headers: [{ name: Argocd-Username, value: root }] }',
      'reserved',
    ],
    ['a Host header', '- { name: a, url: "http://a", headers: [{ name: Host, value: evil }] }', 'reserved'],
    [
      'a header value with a newline',
      '- { name: a, url: "http://a", headers: [{ name: X, value: "a\\nb: c" }] }',
      'control characters',
    ],
    ['an unknown key', '- { name: a, url: "http://a", uri: "http://b" }', 'unknown key'],
  ])('refuses an entry with %s', (_what, entry, message) => {
    const { extensions, problems } = parseAgentExtensionMap(`extensions:\n${entry}\n`);
    expect(extensions.size).toBe(0);
    expect(problems.join('\n')).toContain(message);
  });

  it('keeps the first of two entries with one name and says so', () => {
    const { extensions, problems } = parseAgentExtensionMap(
      'extensions:\n- { name: a, url: "http://one" }\n- { name: a, url: "http://two" }\n',
    );
    expect(extensions.get('a')!.url.host).toBe('one');
    expect(problems).toEqual(['extensions[1].name: a is defined twice; the first one is kept']);
  });

  it('treats an empty document as no extensions, and garbage as a problem', () => {
    expect(parseAgentExtensionMap('')).toEqual({ extensions: new Map(), problems: [] });
    expect(parseAgentExtensionMap('extensions: [ {').problems[0]).toMatch(/^not valid YAML/);
    expect(parseAgentExtensionMap('- a').problems).toEqual([
      'the document must be a mapping with `extensions:`',
    ]);
  });
});
