import {
  createResourceProxyService,
  resourceProxyStartupWarnings,
  validateResourceProxyConfig,
} from '@pullplane/resource-proxy';
import { runService } from '@pullplane/service';
import { resourceProxyOptions } from './options.js';

await runService({
  name: 'resource-proxy',
  summary: "Kubernetes API front for every agent's cluster, through the agents' tunnels.",
  options: resourceProxyOptions,
  family: 'principal',
  validate: validateResourceProxyConfig,
  disabled: (c) =>
    c.enableResourceProxy ? undefined : 'resource proxy is disabled (--enable-resource-proxy=false); exiting',
  warnings: resourceProxyStartupWarnings,
  drainTimeoutMs: (c) => c.drainTimeout,
  create: createResourceProxyService,
});
