import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { UsageError } from '../errors.js';
import { planMigration } from './plan.js';
import { type K8sObject, readFromCluster, readManifests } from './read-install.js';
import { renderMigration } from './render-overlay.js';

export interface MigrateOptions {
  /** Manifest files of the installation, one per cluster (kubectl get -o yaml, or the install manifests). */
  from: string[];
  kubeconfig?: string;
  context?: string;
  /** Namespace(s) read from the cluster (the principal's and the agent's, when they differ). */
  namespace: string[];
  /** Write the overlays and MIGRATION.md here; otherwise print them. */
  out?: string;
  /** Where the deploy/ bundles are (a path, or a remote kustomize base). */
  deployDir: string;
  /** With `out`: write the files (default), or only compute them for that directory (tests). */
  write?: boolean;
}

/**
 * The deploy/ bundles of the checkout this CLI runs from (apps/cli/{src,dist}/migrate/ → the
 * repository root): they match this CLI's version, and nothing is fetched. No remote base is
 * assumed: the project publishes none yet, so a remote one is given with --deploy-dir.
 */
export const DEFAULT_DEPLOY_DIR = fileURLToPath(new URL('../../../../deploy', import.meta.url));

/**
 * `pullplane migrate`: reads an argocd-agent installation and writes pullplane's overlays for
 * it plus a report. Returns the files, keyed by path relative to the output directory.
 */
export async function migrate(opts: MigrateOptions): Promise<Map<string, string>> {
  const remote = /^[a-z]+:\/\//.test(opts.deployDir) || opts.deployDir.startsWith('github.com/');
  if (!remote && !existsSync(path.join(opts.deployDir, 'base')))
    throw new UsageError(
      `${opts.deployDir} holds no pullplane bundles (base/): pass --deploy-dir <checkout>/deploy, or a remote kustomize base such as github.com/<org>/<repo>//deploy?ref=<tag>`,
    );
  const groups: K8sObject[][] = [];
  if (opts.from.length > 0) {
    for (const file of opts.from) groups.push(readManifests(readFileSync(file, 'utf8'), file));
  } else {
    const kc = new KubeConfig();
    if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
    else kc.loadFromDefault();
    if (opts.context) kc.setCurrentContext(opts.context);
    const objects: K8sObject[] = [];
    for (const ns of opts.namespace.length > 0 ? opts.namespace : ['argocd'])
      objects.push(...(await readFromCluster(kc, ns)));
    groups.push(objects);
  }
  const plans = planMigration(groups);
  if (plans.length === 0) {
    throw new Error(
      'no argocd-agent installation found: expected an argocd-agent-params ConfigMap with principal.* or agent.* keys, or a Deployment argocd-agent-principal or argocd-agent-agent',
    );
  }
  const outDir = path.resolve(opts.out ?? '.');
  const files = renderMigration(plans, {
    outDir,
    deployDir: /^[a-z]+:\/\//.test(opts.deployDir) ? opts.deployDir : path.resolve(opts.deployDir),
  });
  if (opts.out && opts.write !== false) {
    for (const [file, text] of files) {
      mkdirSync(path.dirname(path.join(outDir, file)), { recursive: true });
      writeFileSync(path.join(outDir, file), text);
    }
  }
  return files;
}
