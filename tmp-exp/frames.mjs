// How many frames and transport writes an extension GET and a resource-like answer cost, agent → requester.
import http from 'node:http';
import { once } from 'node:events';
import pino from 'pino';
import { ExtensionExecutor, ExtensionRegistry } from '@pullplane/agent-core';
import { createMemoryLink, Multiplexer } from '@pullplane/tunnel';
const logger = pino({ level: 'silent' });
const server = http.createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ ok: true, pad: 'x'.repeat(900) })); });
server.listen(0, '127.0.0.1'); await once(server, 'listening');
const registry = new ExtensionRegistry({ inline: `extensions:\n  - name: m\n    url: http://127.0.0.1:${server.address().port}/\n`, logger });
await registry.start();
const exec = new ExtensionExecutor({ registry, agentName: 'a', logger });
const link = createMemoryLink();
const frames = [];
const requester = new Multiplexer({ sink: link.a, role: 'gateway' });
const agent = new Multiplexer({ sink: link.b, role: 'agent', onStream: (s) => exec.handle(s) });
link.connect((f) => { frames.push(f); requester.receive(f); }, (f) => agent.receive(f));
for (let i = 0; i < 3; i++) {
  frames.length = 0;
  const w0 = link.written().toA;
  const s = requester.open({ head: { case: 'extension', value: { name: 'm', http: { method: 'GET', path: '/x', headers: [] } } }, hasBody: false });
  const head = await s.responseHead();
  let n = 0; for await (const c of s) n += c.length;
  await new Promise((r) => setImmediate(r));
  const kinds = frames.flatMap((f) => (f.kind.case === 'batch' ? f.kind.value.frames : [f])).map((f) => f.kind.case);
  console.log('status', head.status, 'body', n, 'messages', link.written().toA - w0, 'frames', kinds.join(','));
}
process.exit(0);
