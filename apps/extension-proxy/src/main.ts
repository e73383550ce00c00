import { createExtensionProxyService, validateExtensionProxyConfig } from '@pullplane/extension-proxy';
import { runService } from '@pullplane/service';
import { extensionProxyOptions } from './options.js';

await runService({
  name: 'extension-proxy',
  summary:
    "Backend of Argo CD's proxy extensions: reaches each extension's service inside the workload cluster through the agent's tunnel.",
  options: extensionProxyOptions,
  family: 'principal',
  validate: validateExtensionProxyConfig,
  drainTimeoutMs: (c) => c.drainTimeout,
  create: createExtensionProxyService,
});
