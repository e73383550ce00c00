// The young generation is held small while the modules load (see @pullplane/service's
// startup-heap): they are imported only once that is in effect, and it ends once started.
import { releaseStartupHeap } from '@pullplane/service/startup-heap';

const { runService } = await import('@pullplane/service');
const { createGatewayService, gatewayStartupWarnings, validateGatewayConfig } = await import(
  '@pullplane/gateway'
);
const { gatewayOptions } = await import('./options.js');

await runService({
  name: 'stream-gateway',
  summary: 'Holds agent tunnels; proxy replicas reach agents through it.',
  options: gatewayOptions,
  family: 'principal',
  validate: validateGatewayConfig,
  warnings: gatewayStartupWarnings,
  drainTimeoutMs: (c) => c.drainTimeout,
  create: createGatewayService,
  started: releaseStartupHeap,
});
