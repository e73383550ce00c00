// The Kubernetes API stand-in of `npm run bench:resource-proxy`, in a process of its own so its
// CPU is measured apart: HTTPS with a bearer token, seeded with what the benchmark asks for (a
// named pod, a 500-item list, a ~20 MB list), all carrying Argo CD tracking so the managed filter
// lets them through. Prints one JSON line ({"url": …}) when ready.
import { startFakeKubeApiServer } from '@pullplane/testing';

const [cert, key, token] = process.argv.slice(2).map((a) => Buffer.from(a, 'base64').toString());
const api = await startFakeKubeApiServer({ host: '127.0.0.1', tls: { cert, key }, token });
const tracked = (name, ns) => ({
  name,
  namespace: ns,
  annotations: { 'argocd.argoproj.io/tracking-id': `bench:/ConfigMap:${ns}/${name}` },
});
for (const ns of ['bench', 'bench-list', 'bench-big'])
  api.store.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
api.store.put({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    ...tracked('bench-pod', 'bench'),
    annotations: { 'argocd.argoproj.io/tracking-id': 'bench:/Pod:bench/bench-pod' },
    labels: { app: 'bench' },
  },
  spec: { containers: [{ name: 'app', image: 'registry.example/bench:1' }], nodeName: 'node-1' },
  status: { phase: 'Running', podIP: '10.0.0.10' },
});
for (let i = 0; i < 500; i++) {
  api.store.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: tracked(`cm-${String(i).padStart(3, '0')}`, 'bench-list'),
    data: { 'app.properties': `key-${i}=value-${i}\n`.repeat(4) },
  });
}
// 200 × 100 KiB ≈ 20 MB.
const blob = 'x'.repeat(100 * 1024);
for (let i = 0; i < 200; i++) {
  api.store.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: tracked(`big-${String(i).padStart(3, '0')}`, 'bench-big'),
    data: { blob },
  });
}
process.stdout.write(`${JSON.stringify({ url: api.url })}\n`);
process.on('SIGTERM', () => api.close().then(() => process.exit(0)));
