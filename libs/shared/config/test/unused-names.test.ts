import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type AppNameRegistry,
  appNameRegistry,
  type ConfigError,
  defineOptions,
  loadConfig,
  renderHelp,
  renderMarkdownTable,
} from '../src/index.js';

const gateway = defineOptions([
  {
    flag: 'listen-port',
    type: 'port',
    default: 8443,
    env: 'ARGOCD_PRINCIPAL_LISTEN_PORT',
    paramsKey: 'principal.listen.port',
    description: 'Port.',
  },
  {
    flag: 'token-key-path',
    aliases: 'jwt-key',
    type: 'string',
    env: 'ARGOCD_PRINCIPAL_JWT_KEY_PATH',
    paramsKey: 'principal.jwt.key-path',
    description: 'Key.',
  },
  {
    flag: 'insecure-plaintext',
    type: 'boolean',
    env: ['ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT', 'ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT'],
    paramsKey: 'principal.tls.insecure-plaintext',
    description: 'Plaintext.',
  },
  {
    flag: 'redis-ca-path',
    type: 'file',
    mustExist: false,
    env: 'ARGOCD_PRINCIPAL_REDIS_CA_PATH',
    paramsKey: 'principal.redis.ca-path',
    description: 'CA.',
  },
]);

/** The gateway above and a sibling that shares its ConfigMap, plus the agent. */
const registry: AppNameRegistry = {
  'stream-gateway': {
    family: 'principal',
    flags: ['listen-port', 'token-key-path', 'jwt-key'],
    env: ['ARGOCD_PRINCIPAL_LISTEN_PORT', 'ARGOCD_PRINCIPAL_JWT_KEY_PATH'],
    params: ['principal.listen.port', 'principal.jwt.key-path'],
    options: [],
  },
  'resource-proxy': {
    family: 'principal',
    flags: ['resource-proxy-cert-path'],
    env: ['ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_CERT_PATH'],
    params: ['principal.resource-proxy.tls.cert-path'],
    options: [],
  },
  agent: {
    family: 'agent',
    flags: ['server-address'],
    env: ['ARGOCD_AGENT_REMOTE_SERVER'],
    params: ['agent.server.address'],
    options: [],
  },
};
const check = { app: 'stream-gateway', family: 'principal' as const, registry };

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

function params(text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'unused-names-'));
  made.push(dir);
  const p = path.join(dir, 'params.yaml');
  writeFileSync(p, text);
  return p;
}

describe("argocd-agent's names as aliases", () => {
  it('accepts an alias flag and the second env name, with the spelling in the source', () => {
    const r = loadConfig(gateway, {
      argv: ['--jwt-key=/k'],
      env: { ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT: 'true' },
    });
    expect(r.config).toMatchObject({ tokenKeyPath: '/k', insecurePlaintext: true });
    expect(r.sources).toMatchObject({
      tokenKeyPath: { kind: 'flag', name: '--jwt-key' },
      insecurePlaintext: { kind: 'env', name: 'ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT' },
    });
    // Our name wins over argocd-agent's when both are set (the first env name is primary).
    const both = loadConfig(gateway, {
      argv: [],
      env: { ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT: 'true', ARGOCD_PRINCIPAL_TLS_INSECURE_PLAINTEXT: 'false' },
    });
    expect(both.config.insecurePlaintext).toBe(false);
  });

  it('documents aliases next to the flag in help and in the generated table', () => {
    expect(renderHelp('gw', gateway)).toContain(
      '  --token-key-path <string>\n      Key.\n      also: --jwt-key\n',
    );
    expect(renderMarkdownTable(gateway)).toContain('| `--token-key-path`<br>`--jwt-key` |');
  });

  it('refuses an alias that collides with another flag', () => {
    expect(() =>
      defineOptions([
        { flag: 'a', type: 'string', description: 'A.' },
        { flag: 'b', aliases: 'a', type: 'string', description: 'B.' },
      ]),
    ).toThrow('flag a is used by both --a and --b');
  });

  it('does not check a conditional file option at load time (argocd-agent ships mount paths)', () => {
    const r = loadConfig(gateway, { argv: ['--redis-ca-path=/app/config/redis-tls/ca.crt'], env: {} });
    expect(r.config.redisCaPath).toBe('/app/config/redis-tls/ca.crt');
  });
});

describe('names nobody reads', () => {
  const load = (text: string, env: Record<string, string> = {}, argv: string[] = []) =>
    loadConfig(gateway, { argv, env, paramsFile: params(text), unusedNames: check });

  it('says nothing about the keys this app or a sibling reads, and nothing about empty values', () => {
    const r = load(
      [
        'principal.listen.port: "8443"',
        'principal.resource-proxy.tls.cert-path: "/x"',
        'principal.totally-unknown: ""',
      ].join('\n'),
      { ARGOCD_PRINCIPAL_RESOURCE_PROXY_TLS_CERT_PATH: '/x', ARGOCD_PRINCIPAL_EMPTY: '' },
    );
    expect(r.unused).toEqual([]);
  });

  it('warns about an unknown key and env var with the nearest known name', () => {
    const r = load('principal.lisen.port: "9000"\n', { ARGOCD_PRINCIPAL_LISTEN_PROT: '9000' });
    expect(r.unused).toEqual([
      expect.objectContaining({
        source: 'env',
        name: 'ARGOCD_PRINCIPAL_LISTEN_PROT',
        level: 'warn',
        suggestion: 'ARGOCD_PRINCIPAL_LISTEN_PORT',
        message:
          'env ARGOCD_PRINCIPAL_LISTEN_PROT is read by no principal service (did you mean ARGOCD_PRINCIPAL_LISTEN_PORT?); ignored',
      }),
      expect.objectContaining({
        source: 'params',
        name: 'principal.lisen.port',
        level: 'warn',
        suggestion: 'principal.listen.port',
      }),
    ]);
    expect(r.config.listenPort).toBe(8443);
  });

  it("names argocd-agent's features: a warning when set, information when its value leaves it off", () => {
    const r = load(
      [
        'principal.namespace-create.enable: "true"',
        'principal.websocket.enable: "false"',
        'principal.event-processors: "10"',
      ].join('\n'),
      { ARGOCD_PRINCIPAL_HA_ENABLED: 'true' },
    );
    const byName = Object.fromEntries(r.unused.map((u) => [u.name, u]));
    expect(byName['principal.namespace-create.enable']).toMatchObject({
      level: 'warn',
      feature: 'namespace creation on the principal',
    });
    expect(byName['principal.namespace-create.enable']!.message).toContain(
      "belongs to argocd-agent's namespace creation on the principal, which pullplane does not have",
    );
    expect(byName['principal.websocket.enable']).toMatchObject({ level: 'info' });
    expect(byName['principal.websocket.enable']!.message).toContain('its value leaves the feature off');
    expect(byName['principal.event-processors']).toMatchObject({
      level: 'info',
      feature: 'event processors',
    });
    expect(byName.ARGOCD_PRINCIPAL_HA_ENABLED).toMatchObject({
      level: 'warn',
      feature: 'active/passive HA peering',
    });
    expect(byName.ARGOCD_PRINCIPAL_HA_ENABLED!.message).toContain('pullplane is active-active');
  });

  it("tells another family's setting apart from an unknown one", () => {
    const r = load('agent.server.address: "gw"\n', { ARGOCD_AGENT_REMOTE_SERVER: 'gw' });
    expect(r.unused.map((u) => u.message)).toEqual([
      expect.stringMatching(
        /^params key agent\.server\.address in .* is agent's setting, not stream-gateway's; ignored$/,
      ),
      "env ARGOCD_AGENT_REMOTE_SERVER is agent's setting, not stream-gateway's; ignored",
    ]);
  });

  it("names the owner of another app's flag, or argocd-agent's feature, in the unknown-flag error", () => {
    const problems = (argv: string[]) => {
      try {
        loadConfig(gateway, { argv, env: {}, unusedNames: check });
        return [];
      } catch (err) {
        return (err as ConfigError).problems.map((p) => p.message);
      }
    };
    expect(problems(['--resource-proxy-cert-path=/x'])).toEqual([
      'unknown flag --resource-proxy-cert-path (a flag of resource-proxy, not of stream-gateway)',
    ]);
    expect(problems(['--namespace-create-enable'])[0]).toContain(
      "unknown flag --namespace-create-enable (argocd-agent's namespace creation on the principal, which pullplane does not have",
    );
    expect(problems(['--lisen-port=1'])).toEqual(['unknown flag --lisen-port (did you mean --listen-port?)']);
  });

  it("knows every app's names from the generated registry", () => {
    const apps = appNameRegistry();
    expect(Object.keys(apps).sort()).toEqual([
      'agent',
      'extension-proxy',
      'redis-proxy',
      'resource-proxy',
      'stream-gateway',
    ]);
    expect(apps['extension-proxy']!.params).toContain('principal.extension-proxy.allowed-callers');
    // Shared with the gateway: where registration points clusters.
    expect(apps['extension-proxy']!.params).toContain('principal.resource-proxy.url');
    expect(apps['resource-proxy']!.params).toContain('principal.resource-proxy.secret-name');
    expect(apps['stream-gateway']!.env).toContain('ARGOCD_PRINCIPAL_INSECURE_PLAINTEXT');
    expect(apps['redis-proxy']!.flags).toContain('redis-tls-enabled');
  });
});
