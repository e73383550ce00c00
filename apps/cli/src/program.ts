import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { buildKubeconfig, UsageError } from './kubeconfig-command.js';

const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new InvalidArgumentError('must be a positive whole number of seconds');
  return n;
};
const collect = (v: string, prev: string[]) => [...prev, ...v.split(',').filter(Boolean)];

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** The `pullplane` admin command line; commander gives subcommands, help and usage errors. */
export function buildProgram(io: Io): Command {
  const program = new Command('pullplane')
    .description('Administer a pullplane installation.')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  program
    .command('kubeconfig')
    .description('Write a kubeconfig that reaches agents through the resource proxy (one context per agent).')
    .requiredOption('--server <url>', 'resource proxy URL, e.g. https://argocd-agent-resource-proxy:9090')
    .option('--agent <name>', 'an agent (repeatable, or comma-separated)', collect, [])
    .option('--all', 'every agent currently connected (reads presence from NATS)')
    .option('--nats-url <url>', 'NATS for --all')
    .option('--ca-path <file>', "CA that verifies the proxy's certificate")
    .option('--insecure-skip-tls-verify', 'do not verify the proxy (development only)')
    .option('--token-key-path <file>', 'ES256 key the proxy verifies caller tokens with: issue bearer tokens')
    .option(
      '--token-ttl <seconds>',
      'token lifetime (default: no expiry; revoke through the deny list)',
      positiveInt,
    )
    .option('--subject <name>', 'who the token is for (logged by the proxy)', 'kubectl')
    .option('--client-ca-cert <file>', 'CA the proxy trusts for client certificates: issue certificates')
    .option('--client-ca-key <file>', 'private key of --client-ca-cert')
    .option('-o, --output <file>', 'write here (mode 0600) instead of stdout')
    .action(async (opts) => {
      const { agent, clientCaCert, clientCaKey, ...rest } = opts;
      const text = await buildKubeconfig({
        ...rest,
        agents: agent,
        ...(clientCaCert ? { clientCaCertPath: clientCaCert } : {}),
        ...(clientCaKey ? { clientCaKeyPath: clientCaKey } : {}),
      });
      if (!opts.output) io.out(text);
      else io.err(`wrote ${opts.output}\n`);
    });
  return program;
}

/** Runs the CLI and returns the exit code: 0 ok, 2 usage error, 1 failure. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof UsageError) {
      io.err(`error: ${err.message}\n`);
      return 2;
    }
    io.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
