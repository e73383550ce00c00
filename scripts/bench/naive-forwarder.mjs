// The naive Node forwarder the data-path benches calibrate against: what a developer writes in
// ten lines with node:https and a keep-alive agent, with no routing, auth, limits or metrics.
// Usage: node naive-forwarder.mjs <listen-port> <upstream-url> <cert-file> <key-file>
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';

const [port, upstream, certFile, keyFile] = process.argv.slice(2);
const target = new URL(upstream);
const client = target.protocol === 'https:' ? https : http;
const agent = new client.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const server = https.createServer(
  { cert: readFileSync(certFile), key: readFileSync(keyFile) },
  (req, res) => {
    const up = client.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
        rejectUnauthorized: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  },
);
server.keepAliveTimeout = 120_000;
server.listen(Number(port), '127.0.0.1', () => console.log('forwarding'));
process.on('SIGTERM', () => process.exit(0));
