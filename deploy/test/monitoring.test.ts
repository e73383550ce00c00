// deploy/components/monitoring: the PrometheusRule and the Grafana dashboard. Their PromQL is
// checked by promtool (syntax, and the alerts' behaviour on synthetic series), and every metric
// name they use must be one the services export: the four services run as processes and their
// /metrics pages are scraped, with traffic through them so argocd-agent's series get values.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findBinary, makeTempDir } from '@pullplane/testing';
import { Redis } from 'ioredis';
import { Agent as HttpAgent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { find, type K8sObject, render } from './support/render.js';
import { exportedMetricNames, metricValue, type RunningStack, startStack } from './support/running-stack.js';

const run = promisify(execFile);
const FIXTURES = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures/monitoring');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
let rule: K8sObject;
let dashboard: { panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }> };
let dir: string;

beforeAll(async () => {
  const objects = await render('examples/principal-monitoring');
  rule = find(objects, 'PrometheusRule', 'pullplane')!;
  const cm = find(objects, 'ConfigMap', 'pullplane-grafana-dashboard')!;
  dashboard = JSON.parse(cm.data['pullplane.json']);
  dir = makeTempDir('pullplane-monitoring-');
}, 30_000);

const rules = (): Rule[] => (rule.spec.groups as Array<{ rules: Rule[] }>).flatMap((g) => g.rules);
/** Dashboard expressions with Grafana's variables replaced by what Grafana would put there. */
const panelExprs = (): string[] =>
  dashboard.panels
    .flatMap((p) => p.targets ?? [])
    .map((t) => t.expr.replaceAll('$__rate_interval', '5m').replaceAll('$namespace', '.*'));

/** Words in PromQL that are not metric names. */
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'count',
  'avg',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'rate',
  'increase',
  'irate',
  'histogram_quantile',
  'max_over_time',
  'min_over_time',
  'vector',
  'bool',
  'offset',
  'le',
  'topk',
  'bottomk',
  'abs',
  'clamp_min',
  'time',
]);

/** Metric names an expression uses: identifiers outside braces, strings, ranges and by/on lists. */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((m) => m[0])
    .filter((w) => !PROMQL_WORDS.has(w) && !/^[0-9]/.test(w) && w !== 'e');
}

describe('the PrometheusRule and dashboard', () => {
  it('alert on what the issue names: agent disconnected, proxy error rate, gateway saturation', () => {
    const alerts = rules().map((r) => r.alert);
    for (const a of [
      'PullplaneAgentDisconnected',
      'PullplaneResourceProxyErrorRate',
      'PullplaneRedisProxyErrorRate',
      'PullplaneGatewaySaturated',
    ])
      expect(alerts).toContain(a);
  });

  it('warn two weeks before a certificate expires, with a runbook that exists', () => {
    const soon = rules().find((r) => r.alert === 'PullplaneCertificateExpiresSoon') as
      | (Rule & { annotations: Record<string, string> })
      | undefined;
    expect(soon?.expr).toMatch(/pullplane_certificate_expiry_timestamp_seconds - time\(\)\) < 14 \* 86400/);
    // Where it points (runbooks.test.ts checks that every alert's heading exists).
    const certificateRules = rules().filter((r) => /^PullplaneCertificate/.test(r.alert ?? ''));
    expect(certificateRules.length).toBeGreaterThanOrEqual(3);
    for (const r of certificateRules)
      expect((r as { annotations?: Record<string, string> }).annotations?.runbook_url).toMatch(
        /\/deploy\/README\.md#certificate-rotation$/,
      );
  });

  it('pass promtool check rules (and the dashboard queries, as recording rules)', async () => {
    const promtool = findBinary('promtool', 'install promtool (Debian: apt-get install prometheus)');
    const rulesFile = path.join(dir, 'rules.yaml');
    writeFileSync(rulesFile, stringify({ groups: rule.spec.groups }));
    const panels = path.join(dir, 'dashboard-rules.yaml');
    writeFileSync(
      panels,
      stringify({
        groups: [
          {
            name: 'dashboard',
            rules: panelExprs().map((expr, i) => ({ record: `dashboard:panel_${i}`, expr })),
          },
        ],
      }),
    );
    const { stdout } = await run(promtool, ['check', 'rules', rulesFile, panels]);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('fire (and stay quiet) on synthetic series as intended (promtool test rules)', async () => {
    const promtool = findBinary('promtool', 'install promtool (Debian: apt-get install prometheus)');
    writeFileSync(path.join(dir, 'rules.yaml'), stringify({ groups: rule.spec.groups }));
    const tests = readFileSync(path.join(FIXTURES, 'rules.test.yaml'), 'utf8');
    writeFileSync(path.join(dir, 'rules.test.yaml'), `rule_files: [rules.yaml]\n${tests}`);
    const result = await run(promtool, ['test', 'rules', path.join(dir, 'rules.test.yaml')]).catch(
      (err: { stdout: string; stderr: string }) => ({ stdout: err.stdout, stderr: err.stderr }),
    );
    expect(`${result.stdout}${result.stderr}`).toContain('SUCCESS');
  });
});

describe('against the running services', () => {
  let stack: RunningStack;
  beforeAll(async () => {
    stack = await startStack();
  }, 90_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('use only metric names the services export', async () => {
    const exported = new Set<string>();
    for (const port of Object.values(stack.metrics))
      for (const n of await exportedMetricNames(port)) exported.add(n);
    const used = new Map<string, string>();
    for (const r of rules()) for (const n of metricNames(r.expr)) used.set(n, `rule ${r.alert ?? r.record}`);
    for (const e of panelExprs()) for (const n of metricNames(e)) used.set(n, `dashboard: ${e.slice(0, 60)}`);
    expect(used.size).toBeGreaterThan(15);
    const missing = [...used].filter(([n]) => !exported.has(n)).map(([n, where]) => `${n} (${where})`);
    expect(missing).toEqual([]);
  });

  it("count argocd-agent's series per agent, through the real services", async () => {
    const { metrics } = stack;
    expect(await metricValue(metrics.gateway, 'argocd_principal_connected_agents')).toBe(1);
    expect(
      await metricValue(metrics.gateway, 'argocd_principal_agent_connections_total', {
        agent_name: 'agent-a',
      }),
    ).toBe(1);
    expect(
      await metricValue(metrics.gateway, 'pullplane_gateway_agent_tunnel', { agent_name: 'agent-a' }),
    ).toBe(1);
    expect(await metricValue(metrics.agent, 'argocd_agent_connection_status')).toBe(1);

    // Resource proxy: one request for agent-a, one for an agent nobody knows.
    const dispatcher = new HttpAgent({ connect: { ca: stack.pki.ca.certPem } });
    const token = await stack.tokens.issue('argocd-server', { agents: ['agent-a', 'no-such-agent'] });
    const get = async (agent: string) => {
      const res = await request(
        `https://127.0.0.1:${stack.resourceProxyPort}/clusters/${agent}/api/v1/namespaces`,
        {
          dispatcher,
          headers: { authorization: `Bearer ${token}` },
        },
      );
      await res.body.text();
      return res.statusCode;
    };
    expect(await get('agent-a')).toBe(200);
    expect(await get('no-such-agent')).toBe(502);
    await dispatcher.close();
    const rp = metrics.resourceProxy;
    expect(
      await metricValue(rp, 'argocd_principal_resource_proxy_requests_total', { agent_name: 'agent-a' }),
    ).toBe(1);
    // A name presence does not know shares one series, whatever a caller makes up.
    expect(
      await metricValue(rp, 'argocd_principal_resource_proxy_requests_total', { agent_name: '_unknown' }),
    ).toBe(1);
    expect(
      await metricValue(rp, 'argocd_principal_resource_proxy_errors_total', {
        agent_name: '_unknown',
        reason: 'agent_disconnected',
      }),
    ).toBe(1);
    expect(
      await metricValue(rp, 'argocd_principal_resource_proxy_errors_total', { agent_name: 'agent-a' }),
    ).toBe(0);
    expect(await metricValue(metrics.agent, 'argocd_agent_resource_proxy_requests_total')).toBe(1);

    // Redis proxy: a GET of agent-a's live state goes to agent-a.
    const redis = new Redis({
      host: '127.0.0.1',
      port: stack.redisProxyPort,
      password: stack.redisPassword,
      lazyConnect: true,
    });
    await redis.connect();
    expect(await redis.get('app|resources-tree|agent-a_guestbook|1.8.3.gz')).toBeNull();
    redis.disconnect();
    expect(
      await metricValue(metrics.redisProxy, 'argocd_principal_redis_proxy_requests_total', {
        agent_name: 'agent-a',
        command: 'get',
      }),
    ).toBe(1);
    expect(
      await metricValue(metrics.agent, 'argocd_agent_redis_proxy_requests_total', { command: 'get' }),
    ).toBe(1);
  });
});
