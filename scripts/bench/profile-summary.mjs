// Where a process's CPU went, from a V8 CPU profile written with BENCH_CPU_PROF=<dir>: self time
// per package (our libs, each npm package, each Node.js module; native frames charged to the
// package that called them), in µs per request when told how many requests the window served.
//
//   node scripts/bench/profile-summary.mjs <file.cpuprofile> [--last S] [--skip-last S] [--requests N] [--top N]
//
// --last / --skip-last pick a window ending --skip-last seconds before the profile ends (the
// bench's last cell is the one before shutdown), so start-up and other cells stay out.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    last: { type: 'string' },
    'skip-last': { type: 'string', default: '0' },
    requests: { type: 'string' },
    top: { type: 'string', default: '20' },
  },
});
if (positionals.length !== 1) {
  console.error(
    'usage: profile-summary.mjs <file.cpuprofile> [--last S] [--skip-last S] [--requests N] [--top N]',
  );
  process.exit(2);
}

const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** The package a frame belongs to: a lib of ours, an npm package, a Node.js module, or native. */
function packageOf(frame) {
  const url = frame.url;
  const npm = /node_modules\/(@[^/]+\/[^/]+|[^/]+)/.exec(url);
  if (npm) return npm[1];
  const ours = /(libs\/[^/]+\/[^/]+|apps\/[^/]+)/.exec(url);
  if (ours) return ours[1];
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : 'native';
  return url;
}

const endUs = profile.endTime - Number(values['skip-last']) * 1e6;
const startUs = values.last === undefined ? profile.startTime : endUs - Number(values.last) * 1e6;
const self = new Map();
let busy = 0;
let idle = 0;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  at += dt;
  if (at < startUs || at > endUs) continue;
  let id = profile.samples[i];
  let pkg = packageOf(nodes.get(id).callFrame);
  if (pkg === '(idle)') {
    idle += dt;
    continue;
  }
  busy += dt;
  // Native frames (a write, a TLS call) are charged to the nearest caller that has a package.
  while (pkg === 'native' && parent.has(id)) {
    id = parent.get(id);
    const caller = packageOf(nodes.get(id).callFrame);
    if (caller !== 'native') pkg = `${caller} (native)`;
  }
  self.set(pkg, (self.get(pkg) ?? 0) + dt);
}

const requests = values.requests === undefined ? undefined : Number(values.requests);
console.log(
  `window ${((endUs - startUs) / 1e6).toFixed(1)} s: busy ${(busy / 1e3).toFixed(0)} ms, idle ${(idle / 1e3).toFixed(0)} ms${requests ? `, ${requests} requests` : ''}`,
);
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
for (const [pkg, us] of rows) {
  const share = `${((100 * us) / busy).toFixed(1)} %`.padStart(7);
  const perRequest = requests ? `${(us / requests).toFixed(0).padStart(6)} µs/req  ` : '';
  console.log(`${share}  ${perRequest}${pkg}`);
}
