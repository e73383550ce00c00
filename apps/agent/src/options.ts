import { agentServiceOptions } from '@pullplane/agent-core';
import { defineOptions } from '@pullplane/config';
import { opsOptions } from '@pullplane/service';

/** Flags of the agent; env ARGOCD_AGENT_*, params keys agent.* as in argocd-agent. */
export const agentOptions = defineOptions([
  ...agentServiceOptions,
  ...opsOptions({ family: 'agent', metricsPort: 8181, healthzPort: 8002 }),
]);
