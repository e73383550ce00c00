// `pullplane agent create` emits the agent's RBAC from a file generated out of this directory's
// bundle (deploy/base/agent/rbac.yaml, deploy/components/agent-enhanced-rbac): one copy of the
// rules, so a rule changed here reaches the CLI's manifests or fails here.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/render.js';

describe('the RBAC of agent create', () => {
  it('is generated from deploy/base/agent and the enhanced component, up to date (npm run agent-rbac)', async () => {
    const run = promisify(execFile)(process.execPath, ['scripts/agent-rbac.mjs', '--check'], {
      cwd: REPO_ROOT,
    });
    await expect(run).resolves.toMatchObject({
      stdout: 'agent RBAC: apps/cli/src/gen/agent-rbac.ts up to date\n',
    });
  });
});
