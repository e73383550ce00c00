// The two forwarding chains every data-path bench measures next to ours in the same run, so a
// figure of ours always has a C chain and a naive Node chain of the same length beside it:
// three haproxy hops with TLS on each leg (one process each, one thread), and three naive
// node:https keep-alive forwarders (one process each). Each hop is its own process so CPU per
// request can be read per hop, as it is for the proxy, the gateway and the agent.
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import path from 'node:path';
import { freePort } from '@pullplane/testing';
import { children, PROF, root, spawnReady } from './processes.mjs';

const HOPS = 3;

async function listening(port, child, what) {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null)
      throw new Error(`${what} exited (${child.exitCode}): ${child.out?.() ?? ''}`);
    const up = await new Promise((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} never listened on ${port}`);
}

/**
 * Three haproxy processes in a row in front of `target` ({ port, tls }): the client speaks TLS
 * to the first, every hop speaks TLS to the next, the last speaks to the target as the target
 * is served (TLS when `target.tls`). HTTP mode, connection reuse to the next hop, no logging.
 */
export async function startHaproxyHops({ target, file, certPem, keyPem, hops = HOPS }) {
  const pem = file('haproxy.pem', `${certPem}\n${keyPem}\n`);
  const ports = [];
  for (let i = 0; i < hops; i++) ports.push(await freePort());
  const processes = [];
  for (let i = hops - 1; i >= 0; i--) {
    const last = i === hops - 1;
    const next = last ? target.port : ports[i + 1];
    const tlsToNext = last ? target.tls : true;
    const cfg = file(
      `haproxy-${i + 1}.cfg`,
      `global
  nbthread 1
  maxconn 8192
  tune.ssl.default-dh-param 2048
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  http-reuse always
frontend hop
  bind 127.0.0.1:${ports[i]} ssl crt ${pem}
  default_backend next
backend next
  server s 127.0.0.1:${next}${tlsToNext ? ' ssl verify none' : ''} maxconn 4096
`,
    );
    const child = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.out = () => out;
    children.add(child);
    await listening(ports[i], child, `haproxy hop ${i + 1}`);
    processes.unshift(child);
  }
  return {
    port: ports[0],
    pids: processes.map((p) => p.pid),
    names: processes.map((_, i) => `haproxy ${i + 1}`),
    stop: () => Promise.all(processes.map((p) => stopChild(p))),
  };
}

/**
 * Three processes of `naive-forwarder.mjs` in a row in front of `target`: node:https in, a
 * keep-alive node:https (or node:http) agent out, bodies piped, nothing else.
 */
export async function startNodeForwarders({ target, certFile, keyFile, hops = HOPS }) {
  const ports = [];
  for (let i = 0; i < hops; i++) ports.push(await freePort());
  const processes = [];
  for (let i = hops - 1; i >= 0; i--) {
    const last = i === hops - 1;
    const next = last ? target.port : ports[i + 1];
    const scheme = last && !target.tls ? 'http' : 'https';
    const child = await spawnReady(
      process.execPath,
      [
        ...PROF,
        path.join(root, 'scripts', 'bench', 'naive-forwarder.mjs'),
        String(ports[i]),
        `${scheme}://127.0.0.1:${next}`,
        certFile,
        keyFile,
      ],
      'forwarding',
    );
    processes.unshift(child);
  }
  return {
    port: ports[0],
    pids: processes.map((p) => p.pid),
    names: processes.map((_, i) => `node ${i + 1}`),
    stop: () => Promise.all(processes.map((p) => stopChild(p))),
  };
}

function stopChild(child) {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}
