// npm run bench:proxy-fronts — what each proxy's HTTP front costs per request, without the
// gateway, the agent and the backend: the resource proxy and the extension proxy each in a fresh
// process, over TLS with a bearer token (as kubectl and Argo CD call them), forwarding to an
// agent in the same process that answers every stream at once (a real multiplexer pair over the
// in-memory link, wire encoding included). wrk drives each from its own process; the figure that
// matters is the front process's CPU per request, which holds up on a shared machine far better
// than requests per second. Rounds alternate the rows.
//
// BENCH_ROOT=<checkout> measures another checkout's built libs (e.g. the commit before a change)
// next to this one; BENCH_UNCACHED_TOKENS=1 adds rows whose tokens are verified on every request.
// Not a test: it prints figures.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { projectDirs } from '../workspace-projects.mjs';

const here = fileURLToPath(import.meta.url);
const thisRoot = path.resolve(path.dirname(here), '../..');
const run = promisify(execFile);
const BODY = JSON.stringify({
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'bench' },
  pad: 'x'.repeat(900),
});

/** Child mode: `proxy-fronts.mjs serve <resource|extension> <root> <cached|uncached>`. */
async function serve(kind, root, tokens) {
  // libs/<side>/<name>, or libs/<name> in a checkout from before the libs were grouped by side.
  const libDir = (name) =>
    projectDirs(root, ['libs']).find((p) => p.name === name)?.dir ?? path.join('libs', name);
  const lib = (name) => import(pathToFileURL(path.join(root, libDir(name), 'dist', 'index.js')).href);
  const [{ CachedTokenVerifier, TokenAuthority }, { createCertificateAuthority, issueCertificate }, tunnel] =
    await Promise.all([lib('auth'), lib('pki'), lib('tunnel')]);
  const { default: pino } = await import('pino');
  const { Registry } = await import('prom-client');
  const ca = await createCertificateAuthority({ commonName: 'bench-ca' });
  const server = await issueCertificate(ca, {
    commonName: 'localhost',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const audience = kind === 'resource' ? 'resource-proxy' : 'extension-proxy';
  const authority = await TokenAuthority.generate({ audience });
  const token = await authority.issue(kind === 'resource' ? 'bench-caller' : 'argocd-server', {
    agents: ['bench-agent'],
  });
  const verifier = tokens === 'cached' ? new CachedTokenVerifier(authority) : authority;
  // The agent: answers every stream at once, head, body and end together.
  const link = tunnel.createMemoryLink();
  const requester = new tunnel.Multiplexer({ sink: link.a, role: 'gateway' });
  const agent = new tunnel.Multiplexer({
    sink: link.b,
    role: 'agent',
    onStream: (s) => {
      s.resume();
      s.respond(200, [
        { name: 'Content-Type', value: 'application/json' },
        { name: 'Content-Length', value: String(Buffer.byteLength(BODY)) },
      ]);
      s.end(BODY);
    },
  });
  link.connect(
    (f) => requester.receive(f),
    (f) => agent.receive(f),
  );
  const router = { open: (name, { routeDeadline: _, ...init }) => requester.open({ ...init, agent: name }) };
  const common = {
    router,
    logger: pino({ level: 'warn' }),
    registry: new Registry(),
    host: '127.0.0.1',
    port: 0,
    tls: { cert: server.certPem, key: server.keyPem, ca: ca.certPem },
    requestTimeoutMs: 10_000,
    maxRequestBodyBytes: 1024 * 1024,
  };
  const proxy =
    kind === 'resource'
      ? (await lib('resource-proxy')).createResourceProxy({ ...common, auth: { tokens: verifier } })
      : (await lib('extension-proxy')).createExtensionProxy({
          ...common,
          auth: { allowed: ['argocd-server'], tokens: verifier },
          clusterUrlBases: [],
        });
  await proxy.listen();
  const url =
    kind === 'resource'
      ? `https://127.0.0.1:${proxy.port}/clusters/bench-agent/api/v1/namespaces/bench/pods/p`
      : `https://127.0.0.1:${proxy.port}/metrics/api/v1/query`;
  const headers = [
    `Authorization: Bearer ${token}`,
    ...(kind === 'extension'
      ? [
          'Argocd-Application-Name: argocd:guestbook',
          'Argocd-Project-Name: default',
          'Argocd-Target-Cluster-Name: bench-agent',
          'Argocd-Username: bench',
        ]
      : []),
  ];
  // An orderly exit on SIGTERM, so `node --cpu-prof` writes its profile.
  process.once('SIGTERM', () => process.exit(0));
  process.stdout.write(`${JSON.stringify({ url, headers })}\n`);
}

if (process.argv[2] === 'serve') {
  await serve(process.argv[3], process.argv[4], process.argv[5]);
} else {
  await main();
}

function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ on Linux
}

function start(kind, root, tokens) {
  const child = spawn(process.execPath, [here, 'serve', kind, root, tokens], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve({ child, ...JSON.parse(d.toString()) }));
    child.once('exit', (code) => reject(new Error(`${kind} front exited (${code})`)));
  });
}

async function wrk(url, headers, seconds, connections) {
  const { stdout } = await run('wrk', [
    `-t${Math.min(2, connections)}`,
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    ...headers.flatMap((h) => ['-H', h]),
    url,
  ]);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? Number.NaN),
    requests: Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0),
    p50: /50%\s+([\d.]+\w+)/.exec(stdout)?.[1] ?? '?',
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0),
  };
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 5));
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const roots = [['this', thisRoot]];
  if (process.env.BENCH_ROOT) roots.unshift(['other', path.resolve(process.env.BENCH_ROOT)]);
  const tokenModes = process.env.BENCH_UNCACHED_TOKENS === '1' ? ['cached', 'uncached'] : ['cached'];
  const rows = [];
  for (const [label, root] of roots)
    for (const kind of ['resource', 'extension'])
      for (const tokens of tokenModes) rows.push({ label, root, kind, tokens, runs: [] });
  console.log(
    `bench:proxy-fronts ${new Date().toISOString().slice(0, 16)}Z on ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, node ${process.version}, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}, wrk -c${connections} ${seconds} s × ${rounds} rounds`,
  );
  for (let r = 0; r < rounds; r++) {
    for (const row of rows) {
      const front = await start(row.kind, row.root, row.tokens);
      await wrk(front.url, front.headers, 1, connections); // warm-up: JIT, TLS sessions, token cache
      const before = cpuSeconds(front.child.pid);
      const w = await wrk(front.url, front.headers, seconds, connections);
      const cpu = cpuSeconds(front.child.pid) - before;
      front.child.kill('SIGTERM');
      if (w.non2xx > 0) console.error(`  ${row.label} ${row.kind}: ${w.non2xx} non-2xx answers`);
      row.runs.push({ ...w, cpuUs: (cpu * 1e6) / Math.max(1, w.requests) });
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    '| checkout | proxy | tokens | req/s (median) | p50 (median round) | front CPU µs per request: median (min–max) |',
  );
  console.log('| --- | --- | --- | ---: | ---: | --- |');
  for (const row of rows) {
    const cpu = row.runs.map((x) => x.cpuUs);
    const rps = row.runs.map((x) => x.rps);
    const mid = row.runs.find((x) => x.rps === median(rps));
    console.log(
      `| ${row.label === 'this' ? 'this' : path.basename(row.root)} | ${row.kind} | ${row.tokens} | ${median(rps).toFixed(0)} | ${mid?.p50} | ${median(cpu).toFixed(0)} (${Math.min(...cpu).toFixed(0)}–${Math.max(...cpu).toFixed(0)}) |`,
    );
  }
  // Keep the event loop from holding on to anything.
  http.globalAgent.destroy();
}
