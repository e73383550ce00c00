import { createAgentFromConfig, validateAgentConfig } from '@pullplane/agent-core';
import { runService } from '@pullplane/service';
import { agentOptions } from './options.js';

await runService({
  name: 'agent',
  summary: 'Runs in a workload cluster; dials out to the gateway and serves its requests.',
  options: agentOptions,
  family: 'agent',
  validate: validateAgentConfig,
  logFields: (c) => ({ agent: c.agentName }),
  drainTimeoutMs: () => 10_000,
  create: createAgentFromConfig,
});
