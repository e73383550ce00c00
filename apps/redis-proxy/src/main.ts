import { createRedisProxyService, validateRedisProxyConfig } from '@pullplane/redis-proxy';
import { runService } from '@pullplane/service';
import { redisProxyOptions } from './options.js';

await runService({
  name: 'redis-proxy',
  summary:
    "The Argo CD server's Redis: agents' live application state through their tunnels, the rest from the principal Redis.",
  options: redisProxyOptions,
  family: 'principal',
  validate: validateRedisProxyConfig,
  disabled: (c) =>
    c.disableRedisProxy ? 'redis proxy is disabled (--disable-redis-proxy); exiting' : undefined,
  // Owed replies get --drain-timeout; closing the connections after it gets a little more.
  drainTimeoutMs: (c) => c.drainTimeout + 5_000,
  create: createRedisProxyService,
});
