// Every alert the bundles ship says where its runbook is: a `runbook_url` into this repository's
// docs (docs/troubleshooting.md, deploy/README.md), all with one base, at a heading that exists,
// so a renamed heading or a new alert without a runbook fails here.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
// @ts-expect-error: a plain .mjs script without declarations
import { anchorsOf } from '../../scripts/check-links.mjs';
import { DEPLOY_DIR } from './support/render.js';

const ROOT = path.resolve(DEPLOY_DIR, '..');
const DOCS_URL =
  /^https:\/\/github\.com\/pullplane\/pullplane\/blob\/main\/((?:docs|deploy)\/[\w-]+\.md)#([\w-]+)$/;

interface Rule {
  alert?: string;
  annotations?: Record<string, string>;
}

/** Alerts of every PrometheusRule under deploy/ (the test fixtures aside), with their file. */
function alerts(): Array<{ file: string; rule: Rule }> {
  const out: Array<{ file: string; rule: Rule }> = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'test') walk(p);
      } else if (/\.ya?ml$/.test(e.name)) {
        for (const doc of parseAllDocuments(readFileSync(p, 'utf8'))) {
          const o = doc.toJS() as { kind?: string; spec?: { groups?: Array<{ rules?: Rule[] }> } } | null;
          if (o?.kind !== 'PrometheusRule') continue;
          for (const g of o.spec?.groups ?? [])
            for (const rule of g.rules ?? [])
              if (rule.alert) out.push({ file: path.relative(ROOT, p), rule });
        }
      }
    }
  };
  walk(DEPLOY_DIR);
  return out;
}

describe('runbook_url on every alert', () => {
  const found = alerts();

  it('finds the shipped alerts', () => {
    expect(found.map((a) => a.rule.alert)).toContain('PullplaneAgentDisconnected');
  });

  it('points into the docs, at a heading that exists', () => {
    const anchors = new Map<string, Set<string>>();
    const bad: string[] = [];
    for (const { file, rule } of found) {
      const url = rule.annotations?.runbook_url;
      const m = url ? DOCS_URL.exec(url) : null;
      if (!m) {
        bad.push(
          `${file}: ${rule.alert}: runbook_url ${url ?? '(none)'} is not a URL of docs/<page>.md#<heading> (or deploy/) in the repository`,
        );
        continue;
      }
      const [, doc, anchor] = m;
      if (!anchors.has(doc!))
        anchors.set(
          doc!,
          (anchorsOf as (t: string) => Set<string>)(readFileSync(path.join(ROOT, doc!), 'utf8')),
        );
      if (!anchors.get(doc!)!.has(anchor!))
        bad.push(`${file}: ${rule.alert}: ${doc} has no heading #${anchor}`);
    }
    expect(bad).toEqual([]);
  });
});
