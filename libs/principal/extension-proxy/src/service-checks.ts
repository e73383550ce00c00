import { AuthMethodError, parseCallerAuthMethod, plaintextListenerProblems } from '@pullplane/auth';
import { gatewayClientProblems } from '@pullplane/proxy-replica';
import { tlsProtocolSettings } from '@pullplane/tls-material';
import { proxyMaterialProblems } from './proxy-material.js';
import type { ExtensionProxyServiceFlags } from './service-options.js';

export function validateExtensionProxyConfig(
  c: ExtensionProxyServiceFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string[] {
  const problems: string[] = [...tlsProtocolSettings(c).problems, ...proxyMaterialProblems(c, env)];
  let kind: string | undefined;
  try {
    kind = parseCallerAuthMethod(c).kind;
  } catch (err) {
    problems.push(
      err instanceof AuthMethodError && err.code === 'AUTH_METHOD_MESH_UNPINNED'
        ? `--auth=${c.auth} must be pinned: set --mesh-trust-domain and --mesh-caller-namespaces (${err.message})`
        : `--auth: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (kind && kind !== 'mtls' && kind !== 'header')
    problems.push(
      `--auth=${c.auth}: the extension proxy recognises the Argo CD server by mtls or a mesh identity`,
    );
  problems.push(
    ...plaintextListenerProblems({
      insecurePlaintext: c.insecurePlaintext,
      allowInsecureNonLoopback: c.allowInsecureNonLoopback,
      listeners: [{ flag: 'listen-host', host: c.listenHost }],
      ...(kind ? { callerMethod: { flag: 'auth', kind } } : {}),
    }),
  );
  if (c.allowedCallers.length === 0) problems.push('--allowed-callers must name the Argo CD server');
  for (const u of c.resourceProxyUrl) {
    try {
      new URL(u);
    } catch {
      problems.push(`--resource-proxy-url: ${u} is not a URL`);
    }
  }
  problems.push(...gatewayClientProblems(c));
  return problems;
}
