#!/usr/bin/env node
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2), {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
});
// Exit explicitly: a NATS client still retrying an unreachable server would keep us alive.
process.stdout.write('', () => process.exit(code));
