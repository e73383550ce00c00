import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, readParamsFile } from '../src/index.js';
import { principalOptions, tempDir } from './fixtures.js';

function write(content: string, name = 'params.yaml'): string {
  const file = join(tempDir(), name);
  writeFileSync(file, content);
  return file;
}

const entries = (path: string) => Object.fromEntries(readParamsFile(path).entries);
const problems = (path: string) => readParamsFile(path).problems;

const CONFIGMAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-agent-params
data:
  principal.listen.host: ""
  principal.listen.port: "8443"
  principal.log.level: "info"
  principal.tls.insecure-plaintext: "false"
  principal.keep-alive.interval: "1m"
`;

describe('params file formats', () => {
  it('reads the data map of a ConfigMap manifest', () => {
    expect(entries(write(CONFIGMAP))).toEqual({
      'principal.listen.host': '',
      'principal.listen.port': '8443',
      'principal.log.level': 'info',
      'principal.tls.insecure-plaintext': 'false',
      'principal.keep-alive.interval': '1m',
    });
  });

  it('picks argocd-agent-params out of a multi-document manifest', () => {
    const manifest = [
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  principal.listen.port: "1"\n',
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n',
      CONFIGMAP,
    ].join('---\n');
    expect(entries(write(manifest))['principal.listen.port']).toBe('8443');
  });

  it('rejects ambiguous or non-ConfigMap manifests', () => {
    const two = 'kind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\nmetadata: {name: b}\n';
    expect(problems(write(two))).toEqual(['holds several ConfigMaps but none named argocd-agent-params']);
    expect(problems(write('apiVersion: v1\nkind: Secret\ndata: {}\n'))).toEqual([
      'is a Secret manifest, not a ConfigMap',
    ]);
    expect(problems(write('a: 1\n---\nb: 2\n'))).toEqual(['holds several YAML documents but no ConfigMap']);
    expect(problems(write('kind: ConfigMap\ndata:\n  a:\n    b: c\n'))).toEqual([
      'key a: ConfigMap values must be strings',
    ]);
    expect(problems(write('- a\n- b\n'))).toEqual(['is not a YAML map of keys to values']);
  });

  it('accepts a ConfigMap without data', () => {
    expect(entries(write('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n'))).toEqual({});
  });

  it('reads a flat YAML map, keeping scalars as written', () => {
    const file = write('principal.listen.port: 8443\nprincipal.auth: mtls:any\nversion: 1.10\nmode: 0755\n');
    expect(entries(file)).toEqual({
      'principal.listen.port': '8443',
      'principal.auth': 'mtls:any',
      version: '1.10',
      mode: '0755',
    });
  });

  it('flattens nested maps and joins sequences', () => {
    const file = write('principal:\n  listen:\n    port: 9000\n  allowed-namespaces: [a, b]\n');
    expect(entries(file)).toEqual({ 'principal.listen.port': '9000', 'principal.allowed-namespaces': 'a,b' });
  });

  it('reads an empty file as no keys', () => {
    expect(readParamsFile(write(''))).toMatchObject({ problems: [] });
    expect(entries(write(''))).toEqual({});
  });

  it('reports YAML syntax errors without quoting the source', () => {
    const found = problems(write('a: "secret-value\n'));
    expect(found[0]).toMatch(/^is not valid YAML: /);
    expect(found.join()).not.toContain('secret-value');
  });

  it('reads a mounted ConfigMap directory, skipping ..data and dotfiles', () => {
    // Mimic the kubelet layout: ..2024_01_01/<key> files, ..data -> ..2024_01_01, <key> -> ..data/<key>.
    const dir = tempDir();
    const stamp = join(dir, '..2024_01_01_00_00_00.1');
    mkdirSync(stamp);
    writeFileSync(join(stamp, 'principal.listen.port'), '9443\n');
    writeFileSync(join(stamp, 'principal.log.level'), 'debug');
    writeFileSync(join(stamp, 'principal.listen.host'), '');
    symlinkSync('..2024_01_01_00_00_00.1', join(dir, '..data'));
    for (const key of ['principal.listen.port', 'principal.log.level', 'principal.listen.host']) {
      symlinkSync(join('..data', key), join(dir, key));
    }
    writeFileSync(join(dir, '.hidden'), 'x');
    mkdirSync(join(dir, 'nested'));
    expect(entries(dir)).toEqual({
      'principal.listen.host': '',
      'principal.listen.port': '9443',
      'principal.log.level': 'debug',
    });
    const { config, sources } = loadConfig(principalOptions, {
      argv: ['--params-file', dir],
      env: {},
    });
    expect(config.listenPort).toBe(9443);
    expect(config.logLevel).toBe('debug');
    expect(sources.listenHost.kind).toBe('default');
  });

  it('reports a missing path', () => {
    expect(problems(join(tempDir(), 'nope'))).toEqual(['does not exist']);
  });
});

describe('params file through loadConfig', () => {
  it('parses ConfigMap values like any other source', () => {
    const { config, sources } = loadConfig(principalOptions, {
      argv: [],
      env: { ARGOCD_PRINCIPAL_PARAMS_FILE: write(CONFIGMAP) },
      paramsFileEnv: 'ARGOCD_PRINCIPAL_PARAMS_FILE',
    });
    expect(config.keepAliveInterval).toBe(60_000);
    expect(config.listenHost).toBe('');
    expect(sources.listenHost.kind).toBe('default');
    expect(sources.keepAliveInterval.kind).toBe('params');
  });

  it('ignores keys for other components', () => {
    const file = write('agent.creds: userpass:/x\nprincipal.listen.port: "1"\n');
    expect(loadConfig(principalOptions, { argv: ['--params-file', file], env: {} }).config.listenPort).toBe(
      1,
    );
  });
});
