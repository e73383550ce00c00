// The soak's TCP balancers (libs/testing's, standing in for the Services in front of the
// gateways and of each proxy pair) in a process of their own, so the load generator's work
// never delays the data path it measures. Prints `{ name: port }` once listening.
import { startTcpBalancer } from '@pullplane/testing';

const pairs = JSON.parse(process.argv[2]);
const ports = {};
for (const [name, backends] of Object.entries(pairs)) ports[name] = (await startTcpBalancer(backends)).port;
process.stdout.write(`${JSON.stringify(ports)}\n`);
process.on('disconnect', () => process.exit(0));
