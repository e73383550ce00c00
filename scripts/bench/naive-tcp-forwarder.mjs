// The naive Node Redis proxy bench:redis-proxy calibrates against: what a developer writes in a
// few lines with node:net, one upstream connection per client and the bytes piped both ways (no
// parsing, routing, auth, limits or metrics). Its CPU per operation is a floor for what Node's
// sockets and streams cost per read and write.
// Usage: node naive-tcp-forwarder.mjs <listen-port> <upstream-port>
import net from 'node:net';

const [port, upstreamPort] = process.argv.slice(2).map(Number);
const server = net.createServer({ noDelay: true }, (client) => {
  const upstream = net.connect({ host: '127.0.0.1', port: upstreamPort, noDelay: true });
  client.pipe(upstream);
  upstream.pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
server.listen(port, '127.0.0.1', () => console.log('forwarding'));
process.on('SIGTERM', () => process.exit(0));
