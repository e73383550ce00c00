// Process, fixture-file and /proc helpers shared by the bench scripts.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptOf } from '../start-command.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every process a bench started; killed when the bench exits, however it exits. */
export const children = new Set();
/** Every fixture dir a bench made; removed when it exits, after the processes using it. */
const fixtureDirs = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const dir of fixtureDirs) rmSync(dir, { recursive: true, force: true });
});
// Ctrl-C or a kill: 'exit' runs (and takes the children along) only through process.exit.
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

/**
 * Spawns `command` and resolves once its output contains `readyText` (or after 300 ms when
 * there is none to wait for); rejects if it exits first. The child gets `out()`: its output so far.
 */
export function spawnReady(command, args, readyText, opts = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  children.add(child);
  let out = '';
  const ready = Object.assign(child, { out: () => out });
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      out += d.toString();
      if (readyText === undefined || out.includes(readyText)) resolve(ready);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${command} ${args[0] ?? ''} exited (${code}):\n${out}`)));
    if (readyText === undefined) setTimeout(() => resolve(ready), 300);
  });
}

// BENCH_CPU_PROF=<dir>: each app, and each naive forwarder, writes a V8 CPU profile there when it exits.
export const PROF = process.env.BENCH_CPU_PROF
  ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)}`]
  : [];
// BENCH_APP_NODE_OPTIONS="--a --b": Node.js options for our apps only, after their start
// command's (to weigh a runtime option against the calibrations, which do not get it).
const APP_OPTIONS = process.env.BENCH_APP_NODE_OPTIONS?.split(/\s+/).filter(Boolean) ?? [];

/**
 * Stops processes with SIGTERM and waits for each to exit: a clean exit is what writes their CPU
 * profiles under BENCH_CPU_PROF (the 'exit' handler's SIGKILL would lose them).
 */
export async function stopAll(procs, signal = 'SIGTERM') {
  const exited = (p) =>
    new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', r)));
  for (const p of procs) p.kill(signal);
  await Promise.all(procs.map(exited));
}

/**
 * A built app (`apps/<app>/dist/main.js`) with the Node.js options of its start command (as its
 * image runs it), ready once its output contains `readyText`.
 */
export const spawnApp = (app, args, readyText) =>
  spawnReady(
    process.execPath,
    [
      ...PROF,
      ...(startScriptOf(app)?.nodeOptions ?? []),
      ...APP_OPTIONS,
      path.join(root, 'apps', app, 'dist', 'main.js'),
      ...args,
    ],
    readyText,
  );

/** A fresh temp dir, removed when the bench exits, and a writer of files into it (returning each file's path). */
export function fixtureDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  fixtureDirs.add(dir);
  const file = (name, body) => {
    const p = path.join(dir, name);
    writeFileSync(p, body);
    return p;
  };
  return { dir, file };
}

/**
 * The certificates every data-path bench needs, written into a fresh fixture dir: a CA, a
 * server pair for localhost/127.0.0.1 (gateway and proxies), an agent and a proxy client pair.
 */
export async function benchPki(prefix, proxyName = 'resource-proxy') {
  const { createCertificateAuthority, issueCertificate } = await import('@pullplane/pki');
  const { dir, file } = fixtureDir(prefix);
  const ca = await createCertificateAuthority({ commonName: 'bench-ca' });
  const server = await issueCertificate(ca, {
    commonName: 'localhost',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'both',
  });
  const agentCert = await issueCertificate(ca, { commonName: 'bench-agent', usage: 'client', kind: 'agent' });
  const proxyCert = await issueCertificate(ca, { commonName: proxyName, usage: 'client', kind: 'proxy' });
  return {
    dir,
    file,
    ca,
    server,
    agentCert,
    proxyCert,
    caFile: file('ca.crt', ca.certPem),
    tlsCrt: file('tls.crt', server.certPem),
    tlsKey: file('tls.key', server.keyPem),
  };
}

/** A kB field of /proc/<pid>/status (VmRSS, VmHWM, ...). */
export const statusKb = (pid, field = 'VmRSS') =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

/** User + system clock ticks (USER_HZ, 100 on Linux) a process has used. */
export const cpuTicks = (pid) => {
  const { user, system } = cpuSplitTicks(pid);
  return user + system;
};

/** A process's CPU so far in clock ticks, in user space (JavaScript, Node's runtime) and in the kernel. */
export const cpuSplitTicks = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: Number(f[11]), system: Number(f[12]) };
};

/**
 * Clock ticks a process's main thread has used (user + system): the rest of `cpuTicks` went to
 * its other threads (V8's garbage collection and optimizing compiler, libuv's pool).
 */
export const mainThreadTicks = (pid) => {
  const f = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
};

/** The pid and its children (nginx's workers). */
export const family = (pid) => {
  const out = [pid];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
};
