import { loadConfig } from '@pullplane/config';
import { describe, expect, it } from 'vitest';
import { type AgentServiceConfig, agentServiceOptions } from '../src/agent-options.js';
import { applyClusterAgent, type ClusterAgentObject } from '../src/cluster-agent/cluster-agent-spec.js';
import { tokenExpiry } from '../src/cluster-agent/token-expiry.js';

const flags = (...argv: string[]) =>
  ({
    ...loadConfig(agentServiceOptions, { argv: ['--cluster-agent=east', ...argv], env: {} }).config,
    healthzPort: 0,
    metricsPort: 0,
  }) as AgentServiceConfig;
const ca = (spec: NonNullable<ClusterAgentObject['spec']>): ClusterAgentObject => ({
  metadata: { name: 'east' },
  spec,
});

describe('applyClusterAgent', () => {
  it('lets the spec win over flags and keeps the flags for the rest', () => {
    const r = applyClusterAgent(
      flags(
        '--server-address=old.example.com',
        '--agent-name=old',
        '--heartbeat-interval=7s',
        '--creds=mtls:',
      ),
      ca({ server: { address: 'gw.example.com', port: 443 }, agentName: 'east', token: { value: ' t0k ' } }),
    );
    expect('config' in r && r.config).toMatchObject({
      serverAddress: 'gw.example.com',
      serverPort: 443,
      agentName: 'east',
      creds: 'token:clusteragent/east',
      heartbeatInterval: 7_000,
    });
    expect('token' in r && r.token).toEqual({ inline: 't0k' });
  });

  it('maps a client-certificate Secret to mtls and a mesh to header credentials over plaintext', () => {
    const mtls = applyClusterAgent(
      { ...flags(), tlsClientCert: '/x.crt', tlsClientKey: '/x.key' },
      ca({
        server: { address: 'gw' },
        tls: { clientCertSecretName: 'east-tls', rootCaSecretName: 'east-ca' },
      }),
    );
    expect('config' in mtls && mtls.config).toMatchObject({
      creds: 'mtls:',
      tlsSecretName: 'east-tls',
      tlsClientCert: undefined,
      rootCaSecretName: 'east-ca',
    });
    const mesh = applyClusterAgent(flags(), ca({ server: { address: 'gw' }, mesh: { enabled: true } }));
    expect('config' in mesh && mesh.config).toMatchObject({ creds: 'header:', insecurePlaintext: true });
    expect('token' in mesh && mesh.token).toBeUndefined();
  });

  it('reports what makes a spec unusable', () => {
    const r = applyClusterAgent(
      flags(),
      ca({ server: { address: '', port: 70_000 }, token: { secretRef: { name: 's' }, value: 'v' } }),
    );
    expect('problems' in r && r.problems).toEqual([
      'spec.server.address is required',
      'spec.server.port 70000 is not a port',
      'spec.token: give secretRef or value, not both',
    ]);
    const none = applyClusterAgent(flags(), ca({ server: { address: 'gw' } }));
    expect('problems' in none && none.problems[0]).toMatch(/spec.token .* is required unless/);
  });

  it("reads a token's expiry without trusting it, and nothing from a non-JWT", () => {
    const payload = Buffer.from(JSON.stringify({ exp: 1_900_000_000 })).toString('base64url');
    expect(tokenExpiry(`e30.${payload}.sig`)?.toISOString()).toBe('2030-03-17T17:46:40.000Z');
    expect(tokenExpiry('opaque')).toBeUndefined();
    expect(tokenExpiry('a.!!!.c')).toBeUndefined();
  });
});
