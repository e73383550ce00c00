// Writes docs/metrics.md from the metrics the services register: the principal services as the
// single-process mode composes them (one registry, every service's metrics, the redis proxy
// included), and one agent service (built, not started). `--check` fails when the file differs
// from what the code registers now. Needs `npm run build` first.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const load = (rel) => import(pathToFileURL(path.join(root, rel)).href);
const { createMetricsRegistry } = await load('libs/shared/telemetry/dist/index.js');
const { defaultConfig, loadConfig } = await load('libs/shared/config/dist/index.js');
const { createAllInOneApp } = await load('apps/all-in-one/dist/app.js');
const { allInOneOptions } = await load('apps/all-in-one/dist/options.js');
const { agentOptions } = await load('apps/agent/dist/options.js');
const { createAgentService } = await load('libs/agent/agent-core/dist/index.js');
const { default: pino } = await import('pino');

const logger = pino({ level: 'silent' });
const OUT = path.join(root, 'docs/metrics.md');

/** Which service registers a metric, from its name (the registries are shared in one process). */
const OWNERS = [
  [
    /^(pullplane_gateway_|argocd_principal_connected_agents|argocd_principal_agent_connections)/,
    'stream-gateway',
  ],
  [/^(pullplane_resource_proxy_|argocd_principal_resource_proxy_)/, 'resource-proxy'],
  [/^(pullplane_redis_proxy_|argocd_principal_redis_proxy_)/, 'redis-proxy'],
  [/^pullplane_extension_proxy_/, 'extension-proxy'],
  [/^(pullplane_router_|pullplane_proxy_)/, 'every proxy (resource, redis, extension)'],
  [/^(pullplane_certificate_|pullplane_material_)/, 'every service (the agent too)'],
];

async function principalMetrics() {
  const dir = mkdtempSync(path.join(tmpdir(), 'pullplane-metrics-'));
  const registry = createMetricsRegistry({ collectDefaultMetrics: false });
  const app = await createAllInOneApp(
    {
      ...defaultConfig(allInOneOptions),
      stateDir: dir,
      agents: 0,
      gatewayPort: 0,
      resourceProxyPort: 0,
      extensionProxyPort: 0,
      redisProxyPort: 0,
      opsPort: 0,
      // The redis proxy is composed only with a Redis address; nothing is dialled before a client
      // sends a command, and none does here.
      redisServerAddress: '127.0.0.1:1',
    },
    { logger, registry },
  );
  try {
    await app.start();
    return registry.getMetricsAsArray();
  } finally {
    await app.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function agentMetrics() {
  const registry = createMetricsRegistry({ collectDefaultMetrics: false });
  createAgentService(
    loadConfig(agentOptions, {
      argv: ['--server-address=127.0.0.1', '--agent-name=example', '--insecure-tls'],
      env: {},
    }).config,
    { logger, registry },
  );
  return registry.getMetricsAsArray();
}

const describe = (m) => ({
  name: m.name,
  type: m.type,
  labels: [...(m.labelNames ?? [])].sort(),
  help: m.help,
});
const row = (m) =>
  `| \`${m.name}\` | ${m.type} | ${m.labels.map((l) => `\`${l}\``).join(' ') || '–'} | ${m.help.replace(/\|/g, '\\|')} |`;
const table = (ms) =>
  ['| metric | type | labels | meaning |', '| --- | --- | --- | --- |', ...ms.map(row)].join('\n');

const principal = (await principalMetrics()).map(describe);
const agent = agentMetrics().map(describe);
const groups = new Map();
for (const m of principal) {
  const owner = OWNERS.find(([re]) => re.test(m.name))?.[1];
  if (!owner) {
    console.error(`${m.name}: no service owns it; add its prefix to OWNERS in scripts/metrics-docs.mjs`);
    process.exit(1);
  }
  groups.set(owner, [...(groups.get(owner) ?? []), m]);
}
groups.set('agent', agent);
const byName = (a, b) => a.name.localeCompare(b.name);
const sections = [...groups]
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([owner, ms]) => `## ${owner}\n\n${table(ms.sort(byName))}`);
const text = `# Metrics reference

Every metric the services register, generated from the code by \`npm run docs:metrics\` and
checked by \`npm run docs:metrics -- --check\` (part of \`npm test\`): a metric added, renamed or
relabelled without this file fails the check. Each service serves them on \`/metrics\` (its
\`--metrics-port\`); the single-process mode serves all of them on its ops port. Names beginning
\`argocd_\` are argocd-agent's, kept so its dashboards work
([migrating](migrating-from-argocd-agent.md)). Every service also exports Node.js's and the
process's default metrics (\`process_*\`, \`nodejs_*\`, e.g. \`nodejs_eventloop_lag_p99_seconds\`,
which the saturation alert uses); they are not listed. The alerts built on these metrics and what
to do when one fires: [troubleshooting](troubleshooting.md).

${sections.join('\n\n')}
`;
const current = (() => {
  try {
    return readFileSync(OUT, 'utf8');
  } catch {
    return '';
  }
})();
if (check) {
  if (current !== text) {
    console.error('docs/metrics.md is stale: run `npm run docs:metrics`');
    process.exit(1);
  }
  console.log(`docs/metrics.md: ${principal.length + agent.length} metrics, up to date`);
} else {
  writeFileSync(OUT, text);
  console.log(`wrote docs/metrics.md: ${principal.length + agent.length} metrics`);
}
process.exit(0);
