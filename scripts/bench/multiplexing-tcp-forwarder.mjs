// Node's floor for a multiplexing Redis proxy: every client's commands go, as received, onto one
// connection to Redis, written once per event-loop turn (as the redis proxy and twemproxy do), and
// each reply goes back to the client that is owed it. It frames just enough RESP to count
// commands and cut replies (multibulk requests; RESP2 replies) and
// does nothing else: no routing, limits, metrics or checks. It reads its sockets as the redis
// proxy does (through the shared read buffer). What the redis proxy costs above it is the proxy's
// own work; what this costs above twemproxy is Node's per-read and per-write cost.
//
//   node multiplexing-tcp-forwarder.mjs <listen port> <redis port>
import net from 'node:net';
import { connectRedis, readAccepted } from '@pullplane/redis-common';

const [listenPort, redisPort] = process.argv.slice(2).map(Number);

const CR = 0x0d;

/** Where the line starting at `i` ends (its CR), or -1. */
function lineEnd(buf, i) {
  const at = buf.indexOf(CR, i);
  return at === -1 || at + 1 >= buf.length ? -1 : at;
}

function intAt(buf, from, to) {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + (buf[i] - 48);
  return n;
}

/** Counts whole multibulk commands in `buf` from `i`; returns [count, offset after the last]. */
function countCommands(buf, i) {
  let count = 0;
  for (;;) {
    const start = i;
    let end = lineEnd(buf, i);
    if (end === -1 || buf[i] !== 0x2a) return [count, start];
    let args = intAt(buf, i + 1, end);
    i = end + 2;
    while (args-- > 0) {
      end = lineEnd(buf, i);
      if (end === -1) return [count, start];
      i = end + 2 + intAt(buf, i + 1, end) + 2;
      if (i > buf.length) return [count, start];
    }
    count++;
  }
}

/** Where the reply starting at `i` ends, or -1 when it is not whole yet. */
function replyEnd(buf, i) {
  const end = lineEnd(buf, i);
  if (end === -1) return -1;
  const type = buf[i];
  if (type !== 0x24 && type !== 0x2a) return end + 2;
  if (buf[i + 1] === 0x2d) return end + 2; // null bulk or array
  const len = intAt(buf, i + 1, end);
  if (type === 0x24) return end + 2 + len + 2 > buf.length ? -1 : end + 2 + len + 2;
  let at = end + 2;
  for (let n = 0; n < len && at !== -1; n++) at = replyEnd(buf, at);
  return at;
}

const owed = []; // one client per reply, in order
let head = 0;
let batch = [];
let scheduled = false;
let replyCarry = Buffer.alloc(0);
const touched = new Set();

function flushBatch() {
  scheduled = false;
  upstream.write(batch.length === 1 ? batch[0] : Buffer.concat(batch));
  batch = [];
}

function onReplies(chunk) {
  const buf = replyCarry.length ? Buffer.concat([replyCarry, chunk]) : chunk;
  let i = 0;
  for (;;) {
    const end = replyEnd(buf, i);
    if (end === -1) break;
    const client = owed[head];
    owed[head++] = undefined;
    client.out.push(buf.subarray(i, end));
    touched.add(client);
    i = end;
  }
  if (head === owed.length) {
    owed.length = 0;
    head = 0;
  }
  replyCarry = i < buf.length ? buf.subarray(i) : Buffer.alloc(0);
  for (const client of touched) {
    const out = client.out;
    client.out = [];
    client.socket.write(out.length === 1 ? out[0] : Buffer.concat(out));
  }
  touched.clear();
}
const upstream = connectRedis({ host: '127.0.0.1', port: redisPort }, onReplies);
upstream.on('error', (err) => {
  console.error(`redis connection: ${err.message}`);
  process.exit(1);
});

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  const client = { socket, out: [] };
  let carry = Buffer.alloc(0);
  readAccepted(socket, (chunk) => {
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    const [count, used] = countCommands(buf, 0);
    for (let n = 0; n < count; n++) owed.push(client);
    if (used > 0) batch.push(buf.subarray(0, used));
    carry = used < buf.length ? buf.subarray(used) : Buffer.alloc(0);
    if (!scheduled && batch.length > 0) {
      scheduled = true;
      setImmediate(flushBatch);
    }
  });
  socket.on('error', () => undefined);
});
upstream.once('connect', () =>
  server.listen(listenPort, '127.0.0.1', () => console.log(`forwarding ${listenPort} -> ${redisPort}`)),
);
