// docs/install.md has the operator write overlays (`# <dir>/kustomization.yaml` blocks) next to
// the checkout's deploy/ and apply them with `kubectl apply -k ./<dir>`. Here those files are
// written as shown, beside a link to this deploy/, and rendered with kubectl: every overlay the
// guide applies is one it shows, the images are the operator's, and the agent dials the address
// the guide's gateway certificate names.
import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findBinary, makeTempDir } from '@pullplane/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { blocksOf, docCommands } from './support/doc-commands.js';
import { DEPLOY_DIR } from './support/render.js';

const run = promisify(execFile);
const ROOT = path.resolve(DEPLOY_DIR, '..');
const GUIDE = 'docs/install.md';

type Obj = {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  spec?: { template?: { spec?: { containers?: Array<{ image: string }> } } };
};

/** The overlays the guide shows, by directory. */
function overlays(): Map<string, string> {
  const out = new Map<string, string>();
  for (const b of blocksOf(ROOT, GUIDE)) {
    const m = /^# (\S+)\/kustomization\.yaml\n/.exec(b.text);
    if (b.lang === 'yaml' && m) out.set(m[1]!, b.text);
  }
  return out;
}

describe("docs/install.md's overlays", () => {
  const rendered = new Map<string, Obj[]>();
  beforeAll(async () => {
    const dir = makeTempDir('pullplane-install-overlays-');
    symlinkSync(DEPLOY_DIR, path.join(dir, 'deploy'));
    for (const [name, text] of overlays()) {
      mkdirSync(path.join(dir, name));
      writeFileSync(path.join(dir, name, 'kustomization.yaml'), text);
      const { stdout } = await run(
        findBinary('kubectl', 'install kubectl'),
        ['kustomize', path.join(dir, name)],
        {
          maxBuffer: 32 * 1024 * 1024,
        },
      );
      rendered.set(
        name,
        parseAllDocuments(stdout).map((d) => d.toJS() as Obj),
      );
    }
  }, 120_000);

  it('are the ones the guide applies', () => {
    const applied = docCommands(ROOT, [GUIDE], /^kubectl\s/)
      .filter((c) => c.from === 'block')
      .flatMap((c) =>
        c.words.flatMap((w, i) => (c.words[i - 1] === '-k' && w.startsWith('./') ? [w.slice(2)] : [])),
      );
    expect(applied.sort()).toEqual([...overlays().keys()].sort());
  });

  it('run the images the operator built, not the defaults', () => {
    for (const [name, objects] of rendered) {
      const images = objects.flatMap((o) => (o.spec?.template?.spec?.containers ?? []).map((c) => c.image));
      const ours = images.filter((i) =>
        /\/(stream-gateway|resource-proxy|redis-proxy|extension-proxy|agent):/.test(i),
      );
      expect([name, ours.length > 0]).toEqual([name, true]);
      for (const i of ours)
        expect([name, i]).toEqual([name, expect.stringMatching(/^registry\.example\.com\/platform\//)]);
    }
  });

  it("point the agent at the address the gateway's certificate names in the install guide", () => {
    const params = rendered
      .get('east')!
      .find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'argocd-agent-params')!;
    const principalScript = blocksOf(DEPLOY_DIR, 'README.md').find(
      (b) => b.heading === 'Principal Secrets (plain mTLS)' && b.lang === 'sh',
    )!.text;
    const address = /^PRINCIPAL_ADDRESS=(\S+)$/m.exec(principalScript)![1];
    expect(params.data!['agent.server.address']).toBe(address);
  });
});
