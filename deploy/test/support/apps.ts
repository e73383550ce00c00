// What each pullplane container ends up configured with: its flags, env and mounted params file
// are fed to the app's own loadConfig and cross-field validation, in a scratch directory that
// holds the pod's volumes. A misspelt flag, a value of the wrong type, a file path no volume
// provides, or a combination the app refuses (plaintext without header auth, …) fails here the
// way it would fail in the pod.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { validateAgentConfig } from '@pullplane/agent-core';
import { type AuthMethod, parseCallerAuthMethod } from '@pullplane/auth';
import { ConfigError, loadConfig, type OptionDef } from '@pullplane/config';
import { validateExtensionProxyConfig } from '@pullplane/extension-proxy';
import { agentAuthMethod, internalAuthMethod, validateGatewayConfig } from '@pullplane/gateway';
import { validateRedisProxyConfig } from '@pullplane/redis-proxy';
import { validateResourceProxyConfig } from '@pullplane/resource-proxy';
import { agentOptions } from '../../../apps/agent/src/options.js';
import { extensionProxyOptions } from '../../../apps/extension-proxy/src/options.js';
import { redisProxyOptions } from '../../../apps/redis-proxy/src/options.js';
import { resourceProxyOptions } from '../../../apps/resource-proxy/src/options.js';
import { gatewayOptions } from '../../../apps/stream-gateway/src/options.js';
import { find, type K8sObject } from './render.js';

// biome-ignore lint/suspicious/noExplicitAny: configs are the apps' InferConfig types, used generically.
type Config = Record<string, any>;

export interface Listener {
  name: string;
  host: string;
  port: number;
  /** Serves without TLS (behind a mesh sidecar). */
  plaintext: boolean;
  /** Trusts a mesh identity header. */
  headerAuth: boolean;
  /** How a caller may prove who it is. */
  accepts: Credential[];
}

export type Credential = 'client-certificate' | 'bearer-token' | 'mesh-identity' | 'password';

const BY_METHOD: Record<AuthMethod['kind'], Credential> = {
  mtls: 'client-certificate',
  header: 'mesh-identity',
  token: 'bearer-token',
};
/** What an auth method accepts, plus bearer tokens when a key verifies them. */
const accepting = (method: () => AuthMethod, tokenKeyPath?: unknown): Credential[] => {
  let kind: Credential | undefined;
  try {
    kind = BY_METHOD[method().kind];
  } catch {
    // A refused auth spec is the configuration check's problem.
  }
  return [...new Set([...(kind ? [kind] : []), ...(tokenKeyPath ? (['bearer-token'] as const) : [])])];
};

export interface AppSpec {
  app: string;
  /** Undefined while the app's source is not in the tree (redis-proxy, built in parallel). */
  options: readonly OptionDef[] | undefined;
  paramsFileEnv: string;
  validate?: (c: Config) => readonly string[] | undefined;
  listeners(c: Config): Listener[];
  /** Params keys the ConfigMap may carry for this app. */
  paramsKeys(): string[];
  envNames(): string[];
  flags(): string[];
}

const names = (v: string | readonly string[] | undefined) =>
  v === undefined ? [] : typeof v === 'string' ? [v] : [...v];
const isHeaderAuth = (spec: unknown) =>
  typeof spec === 'string' && (spec.startsWith('header:') || spec === 'istio' || spec === 'linkerd');

function fromOptions(
  app: string,
  options: readonly OptionDef[],
  paramsFileEnv: string,
  listeners: (c: Config) => Listener[],
  validate?: (c: Config) => readonly string[] | undefined,
): AppSpec {
  return {
    app,
    options,
    paramsFileEnv,
    ...(validate ? { validate } : {}),
    listeners,
    paramsKeys: () => options.flatMap((o) => names(o.paramsKey)),
    envNames: () => [...options.flatMap((o) => names(o.env)), paramsFileEnv],
    flags: () => [...options.map((o) => o.flag), 'params-file'],
  };
}

const redisProxyListeners = (c: Config): Listener[] => [
  {
    name: 'redis',
    host: String(c.listenHost ?? '0.0.0.0'),
    port: Number(c.listenPort),
    plaintext: !c.tlsCertPath,
    headerAuth: false,
    accepts: [
      ...(c.redisPassword || c.redisCredsDirPath ? (['password'] as const) : []),
      ...(c.tlsClientCaPath ? (['client-certificate'] as const) : []),
    ],
  },
];

let specs: Promise<Record<string, AppSpec>> | undefined;

/** The apps deployed by deploy/, keyed by image name (ghcr.io/pullplane/<app>). */
export function appSpecs(): Promise<Record<string, AppSpec>> {
  specs ??= (async () => ({
    'stream-gateway': fromOptions(
      'stream-gateway',
      gatewayOptions,
      'ARGOCD_PRINCIPAL_PARAMS_FILE',
      (c) => [
        {
          name: 'agents',
          host: c.listenHost,
          port: c.listenPort,
          plaintext: Boolean(c.insecurePlaintext),
          headerAuth: isHeaderAuth(c.auth),
          accepts: accepting(() => agentAuthMethod(c as never)),
        },
        {
          name: 'internal',
          host: c.internalListenHost ?? c.listenHost,
          port: c.internalListenPort,
          plaintext: Boolean(c.insecurePlaintext),
          headerAuth: isHeaderAuth(c.internalAuth),
          accepts: accepting(() => internalAuthMethod(c as never)),
        },
      ],
      (c) => validateGatewayConfig(c as never),
    ),
    'resource-proxy': fromOptions(
      'resource-proxy',
      resourceProxyOptions,
      'ARGOCD_PRINCIPAL_PARAMS_FILE',
      (c) =>
        c.enableResourceProxy
          ? [
              {
                name: 'api',
                host: c.listenHost,
                port: c.listenPort,
                plaintext: Boolean(c.insecurePlaintext),
                headerAuth: isHeaderAuth(c.auth),
                accepts: accepting(() => parseCallerAuthMethod(c as never), c.tokenKeyPath),
              },
            ]
          : [],
      (c) => validateResourceProxyConfig(c as never),
    ),
    'extension-proxy': fromOptions(
      'extension-proxy',
      extensionProxyOptions,
      'ARGOCD_PRINCIPAL_PARAMS_FILE',
      (c) => [
        {
          name: 'api',
          host: c.listenHost,
          port: c.listenPort,
          plaintext: Boolean(c.insecurePlaintext),
          headerAuth: isHeaderAuth(c.auth),
          accepts: accepting(() => parseCallerAuthMethod(c as never), c.tokenKeyPath),
        },
      ],
      (c) => validateExtensionProxyConfig(c as never),
    ),
    'redis-proxy': fromOptions(
      'redis-proxy',
      redisProxyOptions,
      'ARGOCD_PRINCIPAL_PARAMS_FILE',
      redisProxyListeners,
      (c) => validateRedisProxyConfig(c as never),
    ),
    agent: fromOptions(
      'agent',
      agentOptions,
      'ARGOCD_AGENT_PARAMS_FILE',
      () => [],
      (c) => validateAgentConfig(c as never),
    ),
  }))();
  return specs;
}

export const IMAGE = /^ghcr\.io\/pullplane\/([a-z0-9-]+):(.+)$/;

/** The wrapper a container may use instead of the image's entrypoint: sh -c '…; exec node scripts/start-app.mjs <app> "$@"' <app> */
export function entrypointArgv(container: K8sObject['spec']): {
  app?: string;
  argv: string[];
  script?: string;
} {
  const command: string[] | undefined = container.command;
  const args: string[] = container.args ?? [];
  if (!command) return { argv: args };
  if (command[0] === '/bin/sh' && command[1] === '-c' && typeof command[2] === 'string') {
    const m = /exec node scripts\/start-app\.mjs ([a-z0-9-]+) "\$@"\s*$/.exec(command[2]);
    if (!m)
      throw new Error(
        `${container.name}: the sh -c wrapper must end in exec node scripts/start-app.mjs <app> "$@"`,
      );
    return { app: m[1]!, argv: [...command.slice(4), ...args], script: command[2] };
  }
  throw new Error(`${container.name}: command ${JSON.stringify(command)} does not run scripts/start-app.mjs`);
}

export interface ContainerConfig {
  app: string;
  spec: AppSpec;
  /** Parsed config (apps with options); for the redis proxy's contract, the flags as given. */
  config: Config;
  listeners: Listener[];
  metricsPort: number;
  healthzPort: number;
  /** Env as the container sees it (fieldRefs, ConfigMap keys resolved). */
  env: Record<string, string>;
  /** Env names set on the container. */
  envNames: string[];
  argv: string[];
  /** Flags given on the command line, without dashes. */
  flagNames: string[];
  /** Env values taken from the pod IP. */
  podIpEnv: string[];
  /** Problems: unknown flags, bad values, missing files, refused combinations. */
  problems: string[];
  /** The scratch directory standing for the pod's filesystem: a path in `config` minus it is the pod's path. */
  root: string;
}

const POD_IP = '10.0.0.17';
const scratchRoots: string[] = [];

/** Removes the scratch directories of every loaded container. */
export function removeScratch(): void {
  for (const root of scratchRoots.splice(0)) rmSync(root, { recursive: true, force: true });
}

/** Loads one container's configuration the way the app will in its pod. */
export async function containerConfig(
  objects: readonly K8sObject[],
  workload: K8sObject,
  container: K8sObject['spec'],
): Promise<ContainerConfig> {
  const specsByApp = await appSpecs();
  const m = IMAGE.exec(container.image ?? '');
  if (!m) throw new Error(`${workload.metadata.name}/${container.name}: not a pullplane image`);
  const app = m[1]!;
  const spec = specsByApp[app];
  if (!spec) throw new Error(`${workload.metadata.name}/${container.name}: unknown app ${app}`);
  const problems: string[] = [];
  const pod = workload.spec.template.spec;
  const namespace = workload.metadata.namespace ?? 'default';

  // The pod's volumes, materialized under a scratch root.
  const root = mkdtempSync(path.join(tmpdir(), 'pullplane-pod-'));
  scratchRoots.push(root);
  const mounts: Array<{ mountPath: string; local: string }> = [];
  // Paths under a mount point → the same path under the scratch root, in one pass (the scratch
  // root itself may sit under a mount point such as /tmp).
  const rewrite = (s: string) => {
    if (mounts.length === 0) return s;
    const alternatives = [...mounts]
      .sort((a, b) => b.mountPath.length - a.mountPath.length)
      .map((mt) => mt.mountPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
    const re = new RegExp(`(^|[=:,])(${alternatives.join('|')})(?=/|$|,)`, 'g');
    return s.replace(re, (_all, lead: string, mountPath: string) => `${lead}${path.join(root, mountPath)}`);
  };
  const files: Array<{ file: string; content: string }> = [];
  for (const vm of container.volumeMounts ?? []) {
    const local = path.join(root, vm.mountPath);
    mounts.push({ mountPath: vm.mountPath, local });
    mkdirSync(local, { recursive: true });
    const volume = (pod.volumes ?? []).find((v: { name: string }) => v.name === vm.name);
    if (!volume) {
      problems.push(`volumeMount ${vm.name} has no volume`);
      continue;
    }
    if (volume.configMap) {
      const cm = find(objects, 'ConfigMap', volume.configMap.name);
      if (!cm) {
        if (!volume.configMap.optional)
          problems.push(`ConfigMap ${volume.configMap.name} is not in the rendered output`);
        continue;
      }
      const items: Array<{ key: string; path: string }> =
        volume.configMap.items ?? Object.keys(cm.data ?? {}).map((k) => ({ key: k, path: k }));
      for (const it of items)
        files.push({ file: path.join(local, it.path), content: String(cm.data?.[it.key] ?? '') });
    } else if (volume.secret) {
      const items: Array<{ key: string; path: string }> | undefined = volume.secret.items;
      if (!items) problems.push(`secret volume ${vm.name} lists no items: say which keys the app needs`);
      for (const it of items ?? []) files.push({ file: path.join(local, it.path), content: 'placeholder' });
    } else if (volume.projected) {
      // Several Secrets' keys in one directory (`pullplane migrate` maps argocd-agent's CA this way).
      for (const source of volume.projected.sources ?? []) {
        const items: Array<{ key: string; path: string }> | undefined = source.secret?.items;
        if (!source.secret) problems.push(`projected volume ${vm.name}: only Secret sources are expected`);
        else if (!items)
          problems.push(`projected volume ${vm.name}: Secret ${source.secret.name} lists no items`);
        for (const it of items ?? []) files.push({ file: path.join(local, it.path), content: 'placeholder' });
      }
    } else if (!volume.emptyDir) {
      problems.push(`volume ${vm.name}: unexpected volume type`);
    }
  }

  // Env as the container sees it.
  const env: Record<string, string> = {};
  const podIpEnv: string[] = [];
  const expand = (s: string) =>
    s.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, n: string) => env[n] ?? all);
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = expand(String(e.value));
    else if (e.valueFrom?.fieldRef) {
      const f = e.valueFrom.fieldRef.fieldPath;
      if (f === 'status.podIP') podIpEnv.push(e.name);
      env[e.name] =
        f === 'status.podIP'
          ? POD_IP
          : f === 'metadata.namespace'
            ? namespace
            : `${workload.metadata.name}-0`;
    } else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const value = find(objects, 'ConfigMap', ref.name)?.data?.[ref.key];
      if (value === undefined && !ref.optional)
        problems.push(`env ${e.name}: ConfigMap ${ref.name} has no key ${ref.key}`);
      if (value !== undefined) env[e.name] = String(value);
    } else if (e.valueFrom?.secretKeyRef) {
      env[e.name] = 'secret-value';
    } else problems.push(`env ${e.name}: unsupported source`);
  }
  for (const k of Object.keys(env)) env[k] = rewrite(env[k]!);

  let entry: ReturnType<typeof entrypointArgv>;
  try {
    entry = entrypointArgv(container);
  } catch (err) {
    return { ...empty(app, spec, root), problems: [...problems, String((err as Error).message)] };
  }
  if (entry.app !== undefined && entry.app !== app)
    problems.push(`wrapper starts ${entry.app}, image is ${app}`);
  // Variables the wrapper script defaults (: "${NAME:=…}") are set when the app starts.
  for (const [, n] of (entry.script ?? '').matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*):=/g)) {
    env[n!] ??= `set-by-wrapper-${n!.toLowerCase()}`;
  }
  const argv = entry.argv.map((a) => rewrite(expand(a)));
  for (const a of argv) {
    const leftover = /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/.exec(a);
    if (leftover) problems.push(`${a}: $(${leftover[1]}) is not an env var of the container`);
  }
  for (const f of files) {
    mkdirSync(path.dirname(f.file), { recursive: true });
    writeFileSync(f.file, rewrite(f.content));
  }
  const flagNames = argv.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]!);
  const envNames = (container.env ?? []).map((e: { name: string }) => e.name);

  let config: Config = {};
  if (spec.options) {
    try {
      config = loadConfig(spec.options, {
        argv,
        env,
        paramsFileEnv: spec.paramsFileEnv,
        cwd: root,
        ...(spec.validate ? { validate: (c: Config) => spec.validate!(c) } : {}),
      }).config as Config;
    } catch (err) {
      if (err instanceof ConfigError) problems.push(...err.problems.map((p) => p.message));
      else problems.push(String(err));
    }
  } else {
    for (const a of argv) {
      const [name, value] = [
        a.slice(2).split('=')[0]!,
        a.includes('=') ? a.slice(a.indexOf('=') + 1) : 'true',
      ];
      if (!a.startsWith('--') || !spec.flags().includes(name))
        problems.push(`unknown flag ${a.split('=')[0]}`);
      config[name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
    }
    for (const required of ['listenPort', 'metricsPort', 'healthzPort']) {
      if (config[required] === undefined)
        problems.push(
          `redis-proxy: set --${required.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} explicitly`,
        );
    }
  }
  return {
    app,
    spec,
    config,
    listeners: problems.length === 0 ? spec.listeners(config) : [],
    metricsPort: Number(config.metricsPort),
    healthzPort: Number(config.healthzPort),
    env,
    envNames,
    argv,
    flagNames,
    podIpEnv,
    problems,
    root,
  };
}

function empty(app: string, spec: AppSpec, root: string): ContainerConfig {
  return {
    app,
    spec,
    config: {},
    listeners: [],
    metricsPort: Number.NaN,
    healthzPort: Number.NaN,
    env: {},
    envNames: [],
    argv: [],
    flagNames: [],
    podIpEnv: [],
    problems: [],
    root,
  };
}

export { POD_IP };
