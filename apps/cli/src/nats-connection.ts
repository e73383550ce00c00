import {
  type Bus,
  type BusBucket,
  connectNatsBus,
  type NatsSecurityFlags,
  natsConnectionSecurity,
  natsOptions,
  natsSecurityProblems,
  natsSecurityWarnings,
} from '@pullplane/bus';
import { type Command, Option } from 'commander';
import { UsageError } from './errors.js';

/**
 * The CLI's env name for a NATS flag: PULLPLANE_NATS_… A shell inside a principal pod holds the
 * service's ARGOCD_PRINCIPAL_NATS_* (the gateway's identity); the CLI must not pick it up.
 */
export const cliNatsEnv = (flag: string) => `PULLPLANE_${flag.replace(/-/g, '_').toUpperCase()}`;

/**
 * The services' NATS flags (one definition: libs/principal/bus) on a command; `--nats-url` is required
 * when the command always talks to NATS.
 */
export function natsCommandOptions(cmd: Command, url: { description: string; required: boolean }): Command {
  for (const o of natsOptions) {
    if (o.flag === 'presence-replicas') continue;
    const placeholder = o.type === 'file' ? '<file>' : o.flag === 'nats-url' ? '<url>' : '<value>';
    // commander sets a boolean from its env var whatever the value (…=false would mean true):
    // natsFlagsOf reads that one itself.
    const opt = new Option(
      o.type === 'boolean' ? `--${o.flag}` : `--${o.flag} ${placeholder}`,
      o.flag === 'nats-url'
        ? url.description
        : o.type === 'boolean'
          ? `${o.description} (env ${cliNatsEnv(o.flag)}=true)`
          : o.description,
    );
    if (o.type !== 'boolean') opt.env(cliNatsEnv(o.flag));
    if (o.flag === 'nats-url' && url.required) opt.makeOptionMandatory();
    cmd.addOption(opt);
  }
  return cmd;
}

/** The NATS settings out of a command's parsed options (and PULLPLANE_NATS_INSECURE). */
export function natsFlagsOf(
  o: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): NatsSecurityFlags {
  const s = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  const insecureEnv = env[cliNatsEnv('nats-insecure')];
  if (insecureEnv !== undefined && !/^(true|false)$/.test(insecureEnv))
    throw new UsageError(`${cliNatsEnv('nats-insecure')} must be true or false, not "${insecureEnv}"`);
  return {
    natsUrl: s('natsUrl') ?? '',
    natsUser: s('natsUser'),
    natsPassword: s('natsPassword'),
    natsPasswordPath: s('natsPasswordPath'),
    natsNkeySeedPath: s('natsNkeySeedPath'),
    natsCredsPath: s('natsCredsPath'),
    natsTlsCaPath: s('natsTlsCaPath'),
    natsTlsCertPath: s('natsTlsCertPath'),
    natsTlsKeyPath: s('natsTlsKeyPath'),
    natsInsecure: o.natsInsecure === true || insecureEnv === 'true',
  };
}

/**
 * Connects as the admin (or whoever the flags name), runs `fn`, closes. `creates`: the buckets
 * the command writes into and may create (revocations, owned by the admin identity).
 */
export async function withBus<T>(
  flags: NatsSecurityFlags,
  creates: readonly BusBucket[],
  fn: (bus: Bus) => Promise<T>,
  warn: (text: string) => void = (t) => process.stderr.write(`warning: ${t}\n`),
): Promise<T> {
  const problems = natsSecurityProblems(flags);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  for (const w of natsSecurityWarnings(flags)) warn(w);
  const bus = await connectNatsBus({
    servers: flags.natsUrl.split(',').map((u) => u.trim()),
    name: 'pullplane-cli',
    security: natsConnectionSecurity(flags, (m) => warn(m)),
    creates,
    firstConnectTimeoutMs: 5_000,
  });
  try {
    return await fn(bus);
  } finally {
    await bus.close();
  }
}
