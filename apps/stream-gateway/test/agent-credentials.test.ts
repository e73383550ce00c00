import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { credentials, status } from '@grpc/grpc-js';
import type { Agent } from '@pullplane/agent-core';
import { loadConfig } from '@pullplane/config';
import { gatewayStartupWarnings, validateGatewayConfig } from '@pullplane/gateway';
import { type NatsServerHandle, startNatsServer } from '@pullplane/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { gatewayOptions } from '../src/options.js';
import { dial, startGateway } from './in-process.js';
import {
  type GatewayProcess,
  get,
  makePki,
  metricValue,
  spawnApp,
  spawnGateway,
  startAgent,
  startBackend,
  startRouter,
  type TestPki,
} from './support.js';

// Issue 8, item 3: caller credentials never open a tunnel, and a tunnel is only ever replaced
// by the agent's own kind of credential; two holders taking turns are a security event.
let nats: NatsServerHandle;
let pki: TestPki;
let gw: GatewayProcess;
let metricsPort: number;
let routing: Awaited<ReturnType<typeof startRouter>>;
const cleanup: Array<() => unknown> = [];

beforeAll(async () => {
  nats = await startNatsServer();
  pki = await makePki();
  gw = await spawnGateway(pki, nats.url, ['--internal-allowed-clients=resource-proxy']);
  cleanup.push(() => gw.child.kill('SIGKILL'));
  const ops = gw.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === 'ops server listening');
  metricsPort = Number(ops?.metricsPort);
  routing = await startRouter(nats.url, pki);
  cleanup.push(() => routing.close());
}, 30_000);
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
  await nats?.stop();
  rmSync(pki.dir, { recursive: true, force: true });
});

const gatewayLines = () =>
  gw.logs.flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

async function connected(agent: Agent): Promise<void> {
  await new Promise<void>((resolve) => agent.connector.once('connected', () => resolve()));
}

describe('a kubectl (caller) certificate used as an agent', () => {
  it('is refused, and the real tunnel is untouched', async () => {
    const real = await startBackend('agent-a');
    cleanup.push(() => real.close());
    const agentA = await startAgent('agent-a', gw.agentAddress, pki, real.url);
    cleanup.push(() => agentA.stop());
    await connected(agentA);
    await expect.poll(() => routing.router.lookup('agent-a')?.sessionId, { timeout: 10_000 }).toBeTruthy();
    const session = routing.router.lookup('agent-a')!.sessionId;

    // The caller certificate, exactly as `pullplane kubeconfig` issues it to a kubectl user.
    const kubeconfig = path.join(pki.dir, 'kubectl.kubeconfig');
    const cli = spawnApp('cli', [
      'kubeconfig',
      '--server=https://127.0.0.1:9',
      '--agent=agent-a',
      `--client-ca-cert=${pki.ca}`,
      `--client-ca-key=${pki.caKey}`,
      '--file',
      kubeconfig,
    ]);
    expect(await cli.exited).toBe(0);
    const user = (
      parse(readFileSync(kubeconfig, 'utf8')) as { users: Array<{ user: Record<string, string> }> }
    ).users[0]!.user;
    const certFile = path.join(pki.dir, 'stolen.crt');
    const keyFile = path.join(pki.dir, 'stolen.key');
    writeFileSync(certFile, Buffer.from(user['client-certificate-data']!, 'base64'));
    writeFileSync(keyFile, Buffer.from(user['client-key-data']!, 'base64'));

    // An agent process with that certificate, serving the attacker's own "cluster".
    const attacker = await startBackend('attacker');
    cleanup.push(() => attacker.close());
    const attackerKubeconfig = path.join(pki.dir, 'attacker.kubeconfig');
    writeFileSync(
      attackerKubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "${attacker.url}"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n`,
    );
    const impostor = spawnApp('agent', [
      '--agent-name=agent-a',
      '--server-address=127.0.0.1',
      `--server-port=${gw.agentAddress.split(':')[1]}`,
      '--creds=mtls:',
      `--tls-client-cert=${certFile}`,
      `--tls-client-key=${keyFile}`,
      `--root-ca-path=${pki.ca}`,
      `--kubeconfig=${attackerKubeconfig}`,
      '--resource-proxy-filter=none',
      '--metrics-port=0',
      '--healthz-port=0',
    ]);
    cleanup.push(() => impostor.child.kill('SIGKILL'));
    const refused = await impostor.waitForLine((l) => l.msg === 'gateway refused this agent');
    expect(refused.code).toBe(status.UNAUTHENTICATED);
    expect(String(refused.details)).toMatch(
      /is a caller credential; only agent credentials are accepted here/,
    );
    await expect
      .poll(
        () =>
          gatewayLines().find(
            (l) => l.msg === 'agent authentication failed' && l.code === 'AUTH_CREDENTIAL_WRONG_KIND',
          ),
        { timeout: 10_000 },
      )
      .toBeTruthy();

    // The real tunnel: same session, and every request still reaches the real cluster.
    expect(routing.router.lookup('agent-a')?.sessionId).toBe(session);
    for (let i = 0; i < 40; i++) {
      const s = routing.router.open('agent-a', get(`/api/v1/namespaces/guestbook/configmaps?i=${i}`));
      expect((await s.responseHead()).status).toBe(200);
      expect(await text(s)).toMatch(/^agent:agent-a GET /);
    }
    expect(attacker.requests).toEqual([]);
    expect(agentA.connector.session?.sessionId).toBe(session);
    expect(await metricValue(metricsPort, 'pullplane_gateway_tunnel_replacements_total')).toBe(0);
  });
});

describe('two holders of the same agent credential', () => {
  it('are a security event: logged with both addresses and counted', async () => {
    const one = await startBackend('agent-f');
    const two = await startBackend('agent-f');
    cleanup.push(
      () => one.close(),
      () => two.close(),
    );
    const first = await startAgent('agent-f', gw.agentAddress, pki, one.url);
    cleanup.push(() => first.stop());
    await connected(first);
    // A copy of the same Secret, running elsewhere: each connection replaces the other.
    const second = await startAgent('agent-f', gw.agentAddress, pki, two.url);
    cleanup.push(() => second.stop());
    await expect
      .poll(() => gatewayLines().find((l) => l.securityEvent === 'tunnel-flapping'), { timeout: 15_000 })
      .toBeTruthy();
    const event = gatewayLines().find((l) => l.securityEvent === 'tunnel-flapping')!;
    expect(event).toMatchObject({
      level: 'warn',
      agent: 'agent-f',
      msg: 'security: agent tunnel keeps being replaced between holders of the same credentials',
    });
    expect(event.replaced).not.toBe(event.replacedBy);
    for (const remote of [event.replaced, event.replacedBy])
      expect(String(remote)).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(await metricValue(metricsPort, 'pullplane_gateway_tunnel_flapping_total')).toBeGreaterThanOrEqual(
      1,
    );
    expect(
      await metricValue(metricsPort, 'pullplane_gateway_tunnel_replacements_total'),
    ).toBeGreaterThanOrEqual(3);
    await second.stop();
    await first.stop();
  });
});

describe('certificates without a credential kind (issued by other tooling)', () => {
  const tls = (c: { cert: string; key: string }) =>
    credentials.createSsl(readFileSync(pki.ca), readFileSync(c.key), readFileSync(c.cert));
  const flags = () => [
    `--tls-cert=${pki.serverCert}`,
    `--tls-key=${pki.serverKey}`,
    `--root-ca-path=${pki.ca}`,
  ];

  it('are refused by default, naming the opt-in', async () => {
    const strict = await startGateway(flags());
    cleanup.push(() => strict.app.stop());
    const out = await dial(strict.port, tls(await pki.client('agent-l')));
    expect(out.error?.code).toBe(status.UNAUTHENTICATED);
    expect(out.error?.details).toMatch(/does not say it is an agent credential.*--allow-legacy-agent-certs/);
  });

  it('are accepted with --allow-legacy-agent-certs, with a warning, and never replace an agent credential', async () => {
    const lenient = await startGateway([...flags(), '--allow-legacy-agent-certs']);
    cleanup.push(() => lenient.app.stop());
    const legacy = await dial(lenient.port, tls(await pki.client('agent-l')));
    expect(legacy.welcome?.kind.case).toBe('welcome');
    expect(lenient.log.lines.find((l) => l.agent === 'agent-l' && l.msg === 'agent connected')).toMatchObject(
      {
        credential: 'unmarked',
      },
    );
    // Callers' certificates stay refused: the opt-in is about certificates with no kind at all.
    const caller = await dial(lenient.port, tls(await pki.caller('agent-l')));
    expect(caller.error?.code).toBe(status.UNAUTHENTICATED);
    // A tunnel opened with an agent credential cannot be taken over by an unmarked certificate.
    const backend = await startBackend('agent-m');
    const held = await startAgent('agent-m', `127.0.0.1:${lenient.port}`, pki, backend.url);
    cleanup.push(
      () => backend.close(),
      () => held.stop(),
    );
    await connected(held);
    const session = lenient.app.gateway!.session('agent-m')!.sessionId;
    const takeover = await dial(lenient.port, tls(await pki.client('agent-m')));
    expect(takeover.error?.code).toBe(status.PERMISSION_DENIED);
    expect(lenient.app.gateway!.session('agent-m')?.sessionId).toBe(session);
    const { config } = loadConfig(gatewayOptions, {
      argv: [...flags(), '--allow-legacy-agent-certs', '--nats-insecure'],
      env: {},
    });
    expect(validateGatewayConfig(config)).toEqual([]);
    expect(gatewayStartupWarnings(config).join('\n')).toMatch(/any such caller certificate of the same CA/);
  });
});
