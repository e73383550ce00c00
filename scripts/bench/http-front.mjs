// npm run bench:http-front — what fastify would cost the streaming forwarders. A forwarding front
// (request in, the same request streamed to a backend, the response streamed back) on node:http
// and the same front on fastify, next to the backend directly and nginx as a peer proxy. wrk
// drives the load from its own process; each front runs in a fresh process whose peak RSS is read
// after its row. Not a test: it prints figures (record them in the README with date and machine).
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fixtureDir } from './processes.mjs';

const here = fileURLToPath(import.meta.url);
const run = promisify(execFile);
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host']);

/** Child mode: `http-front.mjs serve <backend|node|fastify> <port> <backendPort> <bytes>`. */
async function serve(kind, port, backendPort, bytes) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const forward = (req, res) => {
    const headers = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k)) headers[k] = v;
    const up = http.request(
      { host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers, agent },
      (upRes) => {
        const out = {};
        for (const [k, v] of Object.entries(upRes.headers)) if (!HOP.has(k)) out[k] = v;
        res.writeHead(upRes.statusCode ?? 502, out);
        upRes.pipe(res);
      },
    );
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  };
  let server;
  if (kind === 'backend') {
    const body = Buffer.alloc(bytes, 'x');
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
    });
  } else if (kind === 'node') {
    server = http.createServer(forward);
  } else {
    const { default: Fastify } = await import('fastify');
    const app = Fastify({ logger: false });
    // Streaming bodies: no parsing, the raw request is forwarded as it arrives.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_req, _payload, done) => done(null));
    app.all('/*', (req, reply) => {
      reply.hijack();
      forward(req.raw, reply.raw);
    });
    await app.ready();
    server = app.server;
  }
  server.keepAliveTimeout = 60_000;
  server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
  process.on('message', (m) => {
    if (m === 'rss') process.send({ maxRssKiB: process.resourceUsage().maxRSS });
  });
}

if (process.argv[2] === 'serve') {
  const [kind, port, backendPort, bytes] = process.argv.slice(3);
  await serve(kind, Number(port), Number(backendPort), Number(bytes));
} else {
  await main();
}

function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function start(kind, port, backendPort, bytes) {
  const child = spawn(
    process.execPath,
    [here, 'serve', kind, String(port), String(backendPort), String(bytes)],
    {
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    },
  );
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`${kind} exited (${code})`)));
  });
}

/** CPU seconds (user + system) a process has used so far; 0 once it is gone. */
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ on Linux
  } catch {
    return 0;
  }
}

async function peakRss(child) {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m.maxRssKiB));
    child.send('rss');
  });
}

async function wrk(port, seconds, connections) {
  const { stdout } = await run('wrk', [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    `http://127.0.0.1:${port}/api/v1/namespaces/default/configmaps`,
  ]);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? Number.NaN);
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1] ?? 0);
  const p99 = /99%\s+([\d.]+\w+)/.exec(stdout)?.[1] ?? '?';
  const errors = /Non-2xx or 3xx responses: (\d+)|Socket errors: (.*)/.exec(stdout)?.[0];
  return { rps, p99, errors, requests };
}

async function startNginx(port, backendPort) {
  const { dir } = fixtureDir('bench-http-front-');
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 1024; }
http {
  access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir};
  uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  upstream backend { server 127.0.0.1:${backendPort}; keepalive 64; }
  server { listen 127.0.0.1:${port};
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_request_buffering off; } }
}`,
  );
  const child = spawn('nginx', ['-c', conf, '-p', dir], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 500)); // nginx prints nothing when ready; wrk retries nothing
  return child;
}

async function main() {
  const seconds = Number(process.env.BENCH_SECONDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 10));
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
  const sizes = [1024, 64 * 1024];
  console.log(
    `bench:http-front ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, node ${process.version}, wrk -t1 -c${connections} -d${seconds}s`,
  );
  console.log(
    '| body | row | req/s | × node:http front | × backend direct | p99 | front CPU µs per request | front peak RSS |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const bytes of sizes) {
    const backendPort = await freePort();
    const backend = await start('backend', backendPort, 0, bytes);
    const direct = await wrk(backendPort, seconds, connections);
    const rows = [];
    for (const kind of ['node', 'fastify', 'nginx']) {
      const port = await freePort();
      const child =
        kind === 'nginx' ? await startNginx(port, backendPort) : await start(kind, port, backendPort, bytes);
      await wrk(port, 1, connections); // warm-up: JIT and keep-alive pools
      // The front's own CPU per request: steadier than req/s when other work shares the cores.
      const pid = kind === 'nginx' ? undefined : child.pid;
      const cpuBefore = pid ? cpuSeconds(pid) : 0;
      const r = await wrk(port, seconds, connections);
      const cpuMsPerRequest =
        pid && r.requests > 0 ? ((cpuSeconds(pid) - cpuBefore) * 1000) / r.requests : undefined;
      const rss = kind === 'nginx' ? undefined : await peakRss(child);
      child.kill('SIGTERM');
      rows.push({ kind, ...r, rss, cpuMsPerRequest });
    }
    backend.kill('SIGTERM');
    const node = rows[0].rps;
    const label = `${bytes / 1024} KiB`;
    console.log(`| ${label} | backend direct | ${direct.rps.toFixed(0)} | | 1.00 | ${direct.p99} | | |`);
    for (const r of rows) {
      const name =
        r.kind === 'node' ? 'node:http front' : r.kind === 'fastify' ? 'fastify front' : 'nginx (peer)';
      console.log(
        `| ${label} | ${name} | ${r.rps.toFixed(0)} | ${(r.rps / node).toFixed(2)} | ${(r.rps / direct.rps).toFixed(2)} | ${r.p99} | ${r.cpuMsPerRequest === undefined ? 'n/a' : (r.cpuMsPerRequest * 1000).toFixed(0)} | ${r.rss ? `${(r.rss / 1024).toFixed(0)} MiB` : 'n/a'} |${r.errors ? ` ${r.errors}` : ''}`,
      );
    }
  }
}
