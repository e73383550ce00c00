// Simulator process for the idle-agent benchmark: N agents with no cluster behind them,
// authenticating with a header the way a mesh sidecar would, heartbeating at the given interval.
import { Metadata } from '@grpc/grpc-js';
import { tunnelCredentials } from '@pullplane/grpc-frames';
import { startFleet } from '@pullplane/simulator';
import pino from 'pino';

const [target, count, heartbeat] = process.argv.slice(2);
const names = Array.from({ length: Number(count) }, (_, i) => `idle-${i}`);
const fleet = await startFleet({
  names,
  target,
  clusters: 'none',
  heartbeatIntervalMs: Number(heartbeat),
  logger: pino({ level: 'silent' }),
  credentialsFor: async (name) => ({
    credentials: tunnelCredentials.insecure(),
    metadata: () => {
      const md = new Metadata();
      md.set('x-agent-id', name);
      return md;
    },
  }),
});
await fleet.connected(300_000);
process.stdout.write('all connected\n');
