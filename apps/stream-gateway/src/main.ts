import { createGatewayService, gatewayStartupWarnings, validateGatewayConfig } from '@pullplane/gateway';
import { runService } from '@pullplane/service';
import { gatewayOptions } from './options.js';

await runService({
  name: 'stream-gateway',
  summary: 'Holds agent tunnels; proxy replicas reach agents through it.',
  options: gatewayOptions,
  family: 'principal',
  validate: validateGatewayConfig,
  warnings: gatewayStartupWarnings,
  drainTimeoutMs: (c) => c.drainTimeout,
  create: createGatewayService,
});
