import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ClusterRegistrar } from '@pullplane/registration';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import pino from 'pino';
import { parse } from 'yaml';
import {
  agentCreate,
  agentList,
  agentRevoke,
  caInit,
  certCreate,
  type OutputFormat,
  presenceTable,
  render,
  tokenRevoke,
} from './admin-commands.js';
import { UsageError } from './errors.js';
import { extensionsList, extensionsTable, extensionsToken } from './extensions-command.js';
import { buildKubeconfig, type KubeconfigCommandOptions } from './kubeconfig-command.js';
import { DEFAULT_DEPLOY_DIR, migrate } from './migrate/migrate-command.js';
import { natsCommandOptions, natsFlagsOf } from './nats-connection.js';
import { natsNkeyHolders, natsNkeys } from './nats-nkeys-command.js';
import { addPkiCommands } from './pki-command.js';

const positiveInt = (v: string) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive whole number');
  return n;
};
const port = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError('must be a port (1-65535)');
  return n;
};
const collect = (v: string, prev: string[]) => [...prev, ...v.split(',').filter(Boolean)];
const output = (formats: OutputFormat[], fallback: OutputFormat) =>
  new Option('--output <format>', `output format: ${formats.join(', ')}`).choices(formats).default(fallback);

export { CliErrors, UsageError } from './errors.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

function kubeconfigOptions(cmd: Command): Command {
  return cmd
    .requiredOption('--server <url>', 'resource proxy URL, e.g. https://argocd-agent-resource-proxy:9090')
    .option('--ca-path <file>', "CA that verifies the proxy's certificate")
    .option('--insecure-skip-tls-verify', 'do not verify the proxy (development only)')
    .option('--token-key-path <file>', 'ES256 key the proxy verifies caller tokens with: issue bearer tokens')
    .option(
      '--token-ttl <seconds>',
      'token lifetime (default: no expiry; revoke through the deny list)',
      positiveInt,
    )
    .option('--subject <name>', 'who the token is for (logged by the proxy)', 'kubectl')
    .option(
      '--client-ca-cert <file>',
      'CA the proxy trusts for client certificates: issue caller certificates',
    )
    .option('--client-ca-key <file>', 'private key of --client-ca-cert')
    .option('--file <path>', 'write the kubeconfig here (mode 0600) instead of stdout')
    .addOption(output(['yaml', 'json'], 'yaml'));
}

async function writeKubeconfig(io: Io, opts: Record<string, unknown>, agents: string[]): Promise<void> {
  const nats = natsFlagsOf(opts);
  const rest = Object.fromEntries(Object.entries(opts).filter(([k]) => !k.startsWith('nats')));
  const { clientCaCert, clientCaKey, file, output: format, ...kube } = rest;
  const text = await buildKubeconfig({
    ...(kube as Omit<KubeconfigCommandOptions, 'agents'>),
    agents,
    ...(nats.natsUrl ? { nats, warn: warnTo(io) } : {}),
    ...(clientCaCert ? { clientCaCertPath: clientCaCert as string } : {}),
    ...(clientCaKey ? { clientCaKeyPath: clientCaKey as string } : {}),
    ...(file ? { output: file as string } : {}),
  });
  if (file) io.err(`wrote ${String(file)}\n`);
  else io.out(format === 'json' ? render(parse(text), 'json') : text);
}

const warnTo = (io: Io) => (text: string) => io.err(`warning: ${text}\n`);

/** The `pullplane` admin command line; commander gives subcommands, help and usage errors. */
export function buildProgram(io: Io): Command {
  const program = new Command('pullplane')
    .description('Administer a pullplane installation.')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });

  const ca = program
    .command('ca')
    .description("The certificate authority for agents', callers' and proxies' client certificates.");
  ca.command('init')
    .description('Create a CA (ca.crt, ca.key with mode 0600).')
    .requiredOption('--dir <dir>', 'where to write it')
    .option('--common-name <cn>', 'CA subject', 'pullplane-agent-ca')
    .option('--force', 'replace an existing CA')
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action(async (o) =>
      io.out(render(await caInit({ dir: o.dir, commonName: o.commonName, force: o.force }), o.output)),
    );

  program
    .command('cert')
    .description('Client certificates of one credential kind.')
    .command('create <name>')
    .description(
      "Issue a client certificate of one kind (proxy: a proxy's certificate for the gateways' internal listener), or a listener's server certificate, as a kubernetes.io/tls Secret.",
    )
    .addOption(
      new Option('--kind <kind>', 'agent, caller, proxy (client certificates) or server')
        .choices(['agent', 'caller', 'proxy', 'server'])
        .makeOptionMandatory(),
    )
    .requiredOption('--ca-dir <dir>', 'CA from `ca init`')
    .option('--dns <names>', 'server: DNS names clients dial (repeatable, or comma-separated)', collect, [])
    .option(
      '--ip <addresses>',
      'server: IP addresses clients dial (repeatable, or comma-separated)',
      collect,
      [],
    )
    .option('--secret-name <name>', 'name of the Secret (default <name>-<kind>-tls)')
    .option('--namespace <ns>', 'namespace of the Secret', 'argocd')
    .option('--validity-days <days>', 'certificate lifetime', positiveInt, 365)
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action(async (name: string, o) => io.out(render(await certCreate({ name, ...o }), o.output)));

  natsCommandOptions(
    program
      .command('token')
      .description('Bearer tokens.')
      .command('revoke <jti>')
      .description(
        'Revoke one token by its jti: every gateway and resource proxy refuses it from now on (needs the NATS admin identity).',
      ),
    { description: 'NATS shared by the services', required: true },
  )
    .option('--reason <text>', 'why (logged by the services)', 'revoked by an administrator')
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action(async (jti: string, o) =>
      io.out(
        render(
          await tokenRevoke({ jti, nats: natsFlagsOf(o), reason: o.reason, warn: warnTo(io) }),
          o.output,
        ),
      ),
    );

  program
    .command('nats')
    .description("NATS identities of the principal's roles.")
    .command('nkeys')
    .description(
      'One nkey per role (gateway, proxy, admin): seeds in --dir, the Secrets for the cluster on stdout (NATS gets only the public keys); the admin seed stays in --dir.',
    )
    .requiredOption('--dir <dir>', 'where the seeds are written (<role>.nk, mode 0600)')
    .option('--namespace <ns>', 'namespace of the Secrets', 'argocd')
    .option('--force', 'replace existing seeds (apply the new Secrets and restart NATS)')
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action((o: { dir: string; namespace: string; force?: boolean; output: OutputFormat }) => {
      io.out(render(natsNkeys(o), o.output));
      io.err(`wrote the seeds; who holds which:\n${natsNkeyHolders(o.dir)}\n`);
    });

  const agent = program.command('agent').description('Onboard, inspect and revoke agents.');
  agent
    .command('create <name>')
    .description(
      'Issue credentials for an agent and print everything its cluster needs (ServiceAccount, RBAC, NetworkPolicies, Secrets, the ClusterAgent, the Deployment), named pullplane-agent-<name>.',
    )
    .requiredOption(
      '--server-address <host>',
      'the gateway as the agent reaches it (argocd-agent-principal Service or LB)',
    )
    .option('--server-port <port>', 'gateway port', port, 8443)
    .option('--ca-dir <dir>', 'CA from `ca init`: issue an agent certificate (CN = agent name)')
    .option('--token-key-path <file>', "the gateway's --token-key-path: issue a bearer token instead")
    .option('--gateway-ca-path <file>', "CA of the gateway's server certificate (default: the --ca-dir CA)")
    .option('--namespace <ns>', 'namespace on the workload cluster', 'argocd')
    .option('--image <ref>', 'agent image', 'ghcr.io/pullplane/agent:0.1.0')
    .option('--validity-days <days>', 'client certificate lifetime', positiveInt, 365)
    .addOption(
      new Option('--rbac <level>', "minimal: Argo CD's resources; enhanced: applications' live resources too")
        .choices(['minimal', 'enhanced'])
        .default('minimal'),
    )
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action(async (name: string, o) => io.out(render(await agentCreate({ name, ...o }), o.output)));
  kubeconfigOptions(
    agent
      .command('kubeconfig <name>')
      .description('A kubeconfig reaching one agent through the resource proxy.'),
  ).action(async (name: string, o) => writeKubeconfig(io, o, [name]));
  natsCommandOptions(
    agent
      .command('list')
      .description(
        'Connected agents, from the shared presence: gateway, connected since, last heartbeat, version.',
      ),
    { description: 'NATS holding the presence bucket', required: true },
  )
    .addOption(output(['table', 'json', 'yaml'], 'table'))
    .action(async (o) => {
      const records = await agentList(natsFlagsOf(o), warnTo(io));
      io.out(o.output === 'table' ? presenceTable(records) : render(records, o.output));
    });
  natsCommandOptions(
    agent
      .command('revoke <name>')
      .description(
        'Revoke an agent: every gateway disconnects it and refuses it from now on (needs the NATS admin identity).',
      ),
    { description: 'NATS shared by the gateways', required: true },
  )
    .option('--reason <text>', 'why (logged by the gateways)', 'revoked by an administrator')
    .option(
      '--delete-cluster-secret',
      "also delete the agent's Argo CD cluster Secret (only if pullplane created it)",
    )
    .option(
      '--kubeconfig <file>',
      'control-plane cluster for --delete-cluster-secret (default: in-cluster / $KUBECONFIG)',
    )
    .option('--argocd-namespace <ns>', 'where the cluster Secret lives', 'argocd')
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action(async (name: string, o) => {
      const result: Record<string, string> = await agentRevoke({
        name,
        nats: natsFlagsOf(o),
        reason: o.reason,
        warn: warnTo(io),
      });
      if (o.deleteClusterSecret) {
        const kc = new KubeConfig();
        if (o.kubeconfig) kc.loadFromFile(o.kubeconfig);
        else kc.loadFromDefault();
        const registrar = new ClusterRegistrar({
          kubeConfig: kc,
          namespace: o.argocdNamespace,
          serverFor: () => '',
          credentialsFor: async () => ({ bearerToken: '' }),
          fingerprint: '',
          logger: pino({ level: 'silent' }),
        });
        result.clusterSecret = await registrar.remove(name);
      }
      io.out(render(result, o.output));
    });

  kubeconfigOptions(
    natsCommandOptions(
      program
        .command('kubeconfig')
        .description(
          'A kubeconfig reaching several agents through the resource proxy (one context per agent).',
        )
        .option('--agent <name>', 'an agent (repeatable, or comma-separated)', collect, [])
        .option('--all', 'every agent currently connected (reads presence from NATS)'),
      { description: 'NATS for --all', required: false },
    ),
  ).action(async (o) => {
    const { agent: agents, ...rest } = o;
    await writeKubeconfig(io, rest, agents);
  });

  const extensions = program
    .command('extensions')
    .description("Argo CD proxy extensions through the agents' tunnels.");
  extensions
    .command('list')
    .description(
      "Which agents serve which extension: Argo CD's extension.config (argocd-cm) next to the agents' extension maps.",
    )
    .option('--argocd-cm <file>', 'argocd-cm as a manifest (kubectl -n argocd get cm argocd-cm -o yaml)')
    .option(
      '--agent-map <agent=file>',
      "an agent's extension map: the YAML file, or its ConfigMap manifest (repeatable)",
      (v: string, prev: string[]) => [...prev, v],
      [],
    )
    .option('--map-key <key>', 'key of the map in an agent ConfigMap', 'extensions.yaml')
    .addOption(output(['table', 'yaml', 'json'], 'table'))
    .action(async (o: { argocdCm?: string; agentMap: string[]; mapKey: string; output: OutputFormat }) => {
      if (!o.argocdCm && o.agentMap.length === 0)
        throw new UsageError('give --argocd-cm and/or --agent-map <agent>=<file>');
      const report = await extensionsList({
        ...(o.argocdCm ? { argocdCm: o.argocdCm } : {}),
        agentMaps: o.agentMap,
        mapKey: o.mapKey,
      });
      io.out(o.output === 'table' ? extensionsTable(report) : render(report, o.output));
    });
  extensions
    .command('token')
    .description(
      "A bearer token for the Argo CD server to present to the extension proxy: put `header` into argocd-secret and name that key in each extension's headers (Authorization: $<key>).",
    )
    .requiredOption('--token-key-path <file>', "the extension proxy's --token-key-path (private key)")
    .option('--subject <name>', "on the proxy's --allowed-callers", 'argocd-server')
    .option('--ttl <seconds>', 'lifetime (default: no expiry; revoke by jti)', positiveInt)
    .addOption(output(['yaml', 'json'], 'yaml'))
    .action(async (o: { tokenKeyPath: string; subject: string; ttl?: number; output: OutputFormat }) =>
      io.out(
        render(
          await extensionsToken({
            tokenKeyPath: o.tokenKeyPath,
            subject: o.subject,
            ...(o.ttl ? { ttlSeconds: o.ttl } : {}),
          }),
          o.output,
        ),
      ),
    );

  program
    .command('migrate')
    .description(
      "Read an argocd-agent installation (a manifest file, or a cluster) and write pullplane's Kustomize overlays for it, with a report of what needs doing and what has no equivalent.",
    )
    .option(
      '--from <file>',
      "manifests of the installation (ConfigMaps, Deployments, Secrets), e.g. kubectl get cm,deploy,secret -o yaml; repeat for the principal's and an agent's cluster",
      (v: string, prev: string[]) => [...prev, v],
      [],
    )
    .option('--kubeconfig <file>', 'read the installation from this cluster instead (default: $KUBECONFIG)')
    .option('--context <name>', 'kubeconfig context')
    .option(
      '--namespace <ns>',
      "namespace of argocd-agent (repeatable: the principal's and the agent's)",
      collect,
      [],
    )
    .option(
      '--out <dir>',
      'write <dir>/principal, <dir>/agent and <dir>/MIGRATION.md instead of printing them',
    )
    .option(
      '--deploy-dir <path|url>',
      "pullplane's deploy/ directory the overlays build on (a path, or a remote kustomize base such as github.com/<org>/<repo>//deploy?ref=<tag>)",
      DEFAULT_DEPLOY_DIR,
    )
    .action(
      async (o: {
        from: string[];
        kubeconfig?: string;
        context?: string;
        namespace: string[];
        out?: string;
        deployDir: string;
      }) => {
        const files = await migrate(o);
        if (o.out) {
          io.out(files.get('MIGRATION.md') ?? '');
          io.out(`\nwrote ${[...files.keys()].map((f) => path.join(o.out!, f)).join(', ')}\n`);
          return;
        }
        for (const [file, text] of files) io.out(`# --- ${file} ---\n${text}\n`);
      },
    );
  addPkiCommands(program, io.out, io.err);
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
