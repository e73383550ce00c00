import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nkeys } from '@nats-io/transport-node';
import { type NatsServerHandle, type NatsServerOptions, startNatsServer } from './nats-server.js';
import { makeTempDir } from './processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../..');

/** The NATS configuration deploy/base/principal ships: users per role and their permissions. */
export const DEPLOY_NATS_CONFIG_DIR = path.join(root, 'deploy/base/principal/nats');

export const NATS_ROLES = ['gateway', 'proxy', 'admin'] as const;
export type NatsRole = (typeof NATS_ROLES)[number];

export interface LockedNatsServer extends NatsServerHandle {
  /** Each role's nkey seed file (SU…), for `--nats-nkey-seed-path`. */
  readonly seeds: Readonly<Record<NatsRole, string>>;
  /** Each role's public key (U…), as the server lists it. */
  readonly publicKeys: Readonly<Record<NatsRole, string>>;
  /** Holds the config files and the seeds. */
  readonly dir: string;
}

export interface LockedNatsServerOptions extends Omit<NatsServerOptions, 'config' | 'configDir' | 'env'> {
  /** Appended to the configuration (a `tls { … }` block…); use absolute paths for files. */
  extraConfig?: string;
  /**
   * An `authorization { … }` block in place of the shipped users (auth.conf), e.g. password
   * users; the shipped role permissions ($PULLPLANE_GATEWAY, $PULLPLANE_PROXY, $PULLPLANE_ADMIN)
   * stay available to it, and it must use all three (nats-server refuses unused variables).
   */
  authorization?: string;
}

/**
 * A nats-server with the shipped users and permissions (byte-for-byte copies of
 * deploy/base/principal/nats/*.conf; nats-server includes only relative paths) and a fresh nkey
 * per role, passed in the environment as the NATS pods get them from their Secret. What this
 * server refuses, the deployed NATS refuses.
 */
export async function startLockedNatsServer(
  options: LockedNatsServerOptions = {},
): Promise<LockedNatsServer> {
  const { extraConfig, authorization, ...rest } = options;
  const dir = makeTempDir('nats-locked-');
  for (const file of ['auth.conf', 'permissions.conf'])
    copyFileSync(path.join(DEPLOY_NATS_CONFIG_DIR, file), path.join(dir, file));
  const seeds = {} as Record<NatsRole, string>;
  const publicKeys = {} as Record<NatsRole, string>;
  const env: Record<string, string> = {};
  for (const role of NATS_ROLES) {
    const kp = nkeys.createUser();
    seeds[role] = path.join(dir, `${role}.nk`);
    writeFileSync(seeds[role], `${new TextDecoder().decode(kp.getSeed())}\n`, { mode: 0o600 });
    publicKeys[role] = kp.getPublicKey();
    env[`PULLPLANE_NATS_${role.toUpperCase()}_NKEY`] = kp.getPublicKey();
  }
  const config = [
    authorization === undefined ? 'include ./auth.conf' : `include ./permissions.conf\n${authorization}`,
    extraConfig ?? '',
  ].join('\n');
  const nats = await startNatsServer({ ...rest, config, configDir: dir, env });
  return Object.assign(nats, { seeds, publicKeys, dir });
}
