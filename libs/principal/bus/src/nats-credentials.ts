import { readFileSync } from 'node:fs';
import {
  type Authenticator,
  type ConnectionOptions,
  credsAuthenticator,
  nkeyAuthenticator,
  nkeys,
  type TlsOptions,
  usernamePasswordAuthenticator,
} from '@nats-io/transport-node';
import { BusError, BusErrorCode } from './errors.js';

/** How a service or the CLI authenticates to NATS and protects the connection (the `--nats-*` flags). */
export interface NatsSecurityFlags {
  natsUrl: string;
  natsUser?: string | undefined;
  natsPassword?: string | undefined;
  natsPasswordPath?: string | undefined;
  natsNkeySeedPath?: string | undefined;
  natsCredsPath?: string | undefined;
  natsTlsCaPath?: string | undefined;
  natsTlsCertPath?: string | undefined;
  natsTlsKeyPath?: string | undefined;
  natsInsecure: boolean;
}

/** What `connect` needs for the identity and TLS, and who the connection is, for logs and errors. */
export interface NatsConnectionSecurity {
  readonly options: Pick<ConnectionOptions, 'authenticator' | 'tls'>;
  /** `nkey UABC…`, `user gateway`, `creds /path`, `client certificate /path` or `none`. */
  readonly identity: string;
}

const IDENTITY_FLAGS =
  '--nats-nkey-seed-path, --nats-creds-path, --nats-user with --nats-password-path, or a client certificate (--nats-tls-cert-path with --nats-tls-key-path)';

const hasIdentity = (c: NatsSecurityFlags) =>
  Boolean(c.natsUser || c.natsNkeySeedPath || c.natsCredsPath || c.natsTlsCertPath);

/** TLS is demanded (a connection without it fails) by a `tls://` URL, a CA or a client certificate. */
export function natsTlsRequired(c: NatsSecurityFlags): boolean {
  return (
    Boolean(c.natsTlsCaPath || c.natsTlsCertPath) ||
    c.natsUrl.split(',').some((u) => u.trim().toLowerCase().startsWith('tls://'))
  );
}

/**
 * Combinations that cannot work, and a missing identity: NATS holds presence and revocations,
 * so going without credentials takes an explicit `--nats-insecure`.
 */
export function natsSecurityProblems(c: NatsSecurityFlags): string[] {
  const problems: string[] = [];
  const identities = [
    c.natsUser && '--nats-user',
    c.natsNkeySeedPath && '--nats-nkey-seed-path',
    c.natsCredsPath && '--nats-creds-path',
  ].filter(Boolean);
  if (identities.length > 1) problems.push(`choose one NATS identity: ${identities.join(', ')} are all set`);
  if (c.natsPassword && c.natsPasswordPath)
    problems.push('--nats-password and --nats-password-path: give one (the file is preferred)');
  if ((c.natsPassword || c.natsPasswordPath) && !c.natsUser)
    problems.push('a NATS password needs --nats-user');
  if (c.natsUser && !c.natsPassword && !c.natsPasswordPath)
    problems.push('--nats-user needs --nats-password-path (or --nats-password)');
  if (Boolean(c.natsTlsCertPath) !== Boolean(c.natsTlsKeyPath))
    problems.push('--nats-tls-cert-path and --nats-tls-key-path go together');
  if (!hasIdentity(c) && !c.natsInsecure)
    problems.push(
      `NATS holds agent presence and revocations: without credentials anyone who reaches it can rewrite both. Give this process its NATS identity (${IDENTITY_FLAGS}), or pass --nats-insecure for a NATS that requires none (development only)`,
    );
  if (hasIdentity(c) && c.natsInsecure)
    problems.push('--nats-insecure (no credentials) contradicts the NATS credentials given: drop one');
  return problems;
}

/** What to log once at startup: going without credentials, or a password that may cross in the clear. */
export function natsSecurityWarnings(c: NatsSecurityFlags): string[] {
  const warnings: string[] = [];
  if (c.natsInsecure && !hasIdentity(c))
    warnings.push(
      'INSECURE: --nats-insecure connects to NATS without credentials. Whoever reaches NATS can delete revocations (revoked agents and tokens work again), rewrite presence (route agents to another gateway) and read who is connected. Development only.',
    );
  if (c.natsUser && !natsTlsRequired(c))
    warnings.push(
      'the NATS password is not required to travel over TLS: set --nats-tls-ca-path (or a tls:// URL) unless a mesh encrypts the connection; an nkey or creds file sends no secret',
    );
  return warnings;
}

/**
 * Reads and checks the credential and TLS files now (a bad one fails startup, naming its flag)
 * and returns connect options that read them again on every reconnect, so a rotated Secret is
 * picked up; a file that breaks later keeps its last good content.
 */
export function natsConnectionSecurity(
  c: NatsSecurityFlags,
  onWarning: (message: string, err?: unknown) => void = () => undefined,
): NatsConnectionSecurity {
  const problems = natsSecurityProblems(c);
  if (!hasIdentity(c) && !c.natsInsecure)
    throw new BusError(BusErrorCode.NO_CREDENTIALS, problems[problems.length - 1]!);
  if (problems.length > 0) throw new BusError(BusErrorCode.CREDENTIALS_INVALID, problems.join('; '));

  let authenticator: Authenticator | undefined;
  let identity = 'none';
  if (c.natsNkeySeedPath) {
    const seed = followFile(c.natsNkeySeedPath, 'nats-nkey-seed-path', parseUserSeed, onWarning);
    authenticator = nkeyAuthenticator(seed);
    identity = `nkey ${nkeys.fromSeed(seed()).getPublicKey()}`;
  } else if (c.natsCredsPath) {
    authenticator = credsAuthenticator(followFile(c.natsCredsPath, 'nats-creds-path', parseCreds, onWarning));
    identity = `creds ${c.natsCredsPath}`;
  } else if (c.natsUser) {
    const pass = c.natsPasswordPath
      ? followFile(c.natsPasswordPath, 'nats-password-path', parsePassword, onWarning)
      : () => c.natsPassword!;
    authenticator = usernamePasswordAuthenticator(c.natsUser, pass);
    identity = `user ${c.natsUser}`;
  } else if (c.natsTlsCertPath) {
    identity = `client certificate ${c.natsTlsCertPath}`;
  }

  let tls: TlsOptions | undefined;
  if (natsTlsRequired(c)) {
    tls = {};
    // nats.js reads the *File options on every (re)connect: checked here, re-read on rotation.
    if (c.natsTlsCaPath) tls.caFile = checkedPem(c.natsTlsCaPath, 'nats-tls-ca-path', 'CERTIFICATE');
    if (c.natsTlsCertPath) tls.certFile = checkedPem(c.natsTlsCertPath, 'nats-tls-cert-path', 'CERTIFICATE');
    if (c.natsTlsKeyPath) tls.keyFile = checkedPem(c.natsTlsKeyPath, 'nats-tls-key-path', 'PRIVATE KEY');
  }
  return {
    options: { ...(authenticator ? { authenticator } : {}), ...(tls ? { tls } : {}) },
    identity,
  };
}

function readOrFail(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new BusError(BusErrorCode.CREDENTIALS_INVALID, `--${flag}: cannot read ${path}: ${String(err)}`, {
      cause: err,
    });
  }
}

/** The file's parsed content now (or a clear error), and a reader that refreshes it on each call. */
function followFile<T>(
  path: string,
  flag: string,
  parse: (content: Buffer) => T,
  onWarning: (message: string, err?: unknown) => void,
): () => T {
  const parseOrFail = (content: Buffer) => {
    try {
      return parse(content);
    } catch (err) {
      throw new BusError(BusErrorCode.CREDENTIALS_INVALID, `--${flag}: ${path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  };
  let last = parseOrFail(readOrFail(path, flag));
  return () => {
    try {
      last = parseOrFail(readOrFail(path, flag));
    } catch (err) {
      onWarning(`--${flag}: ${path} could not be read again; reconnecting with its previous content`, err);
    }
    return last;
  };
}

function parseUserSeed(content: Buffer): Uint8Array {
  const seed = new TextEncoder().encode(content.toString('utf8').trim());
  try {
    nkeys.fromSeed(seed);
  } catch {
    throw new Error('not an nkey seed (a line starting with SU…)');
  }
  // An account or operator seed would authenticate as something else than a user.
  if (!content.toString('utf8').trim().startsWith('SU'))
    throw new Error('not an nkey *user* seed (it must start with SU)');
  return seed;
}

function parseCreds(content: Buffer): Uint8Array {
  const creds = new Uint8Array(content);
  try {
    // The authenticator parses the JWT and seed sections; signing a nonce proves both are there.
    const auth = credsAuthenticator(creds)('check') as { jwt?: string } | undefined;
    if (!auth?.jwt) throw new Error('no JWT');
  } catch {
    throw new Error('not a NATS credentials file (a user JWT and an nkey seed, as nsc writes them)');
  }
  return creds;
}

function parsePassword(content: Buffer): string {
  // Files written with `echo` end in a newline that is not part of the password.
  const pass = content.toString('utf8').replace(/\r?\n$/, '');
  if (pass === '') throw new Error('the password file is empty');
  return pass;
}

function checkedPem(path: string, flag: string, label: string): string {
  const text = readOrFail(path, flag).toString('utf8');
  if (!text.includes('-----BEGIN') || !text.includes(label))
    throw new BusError(BusErrorCode.CREDENTIALS_INVALID, `--${flag}: ${path} holds no PEM ${label}`);
  return path;
}

/** A fresh NATS nkey user: the seed (SU…) its holder signs with, the public key (U…) the server lists. */
export function createNatsUserNkey(): { seed: string; publicKey: string } {
  const kp = nkeys.createUser();
  return { seed: new TextDecoder().decode(kp.getSeed()), publicKey: kp.getPublicKey() };
}
