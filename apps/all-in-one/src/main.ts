import { runService } from '@pullplane/service';
import { createAllInOneApp } from './app.js';
import { allInOneOptions } from './options.js';

await runService({
  name: 'all-in-one',
  title: 'all-in-one',
  summary: 'Gateway, resource proxy and redis proxy in one process, with demo agents on simulated clusters.',
  options: allInOneOptions,
  drainTimeoutMs: () => 5_000,
  create: createAllInOneApp,
  started: (app) => process.stderr.write(app.nextSteps()),
});
