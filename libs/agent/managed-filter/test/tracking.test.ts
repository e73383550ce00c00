import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TRACKING,
  fromArgoCdConfigMap,
  isTracked,
  parseTrackingId,
  type TrackingConfig,
} from '../src/index.js';

const cm = (data?: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'argocd-cm', namespace: 'argocd' },
  ...(data ? { data } : {}),
});

const obj = (annotations?: Record<string, string>, labels?: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'guestbook-config', namespace: 'guestbook', annotations, labels },
});

const ID = 'guestbook:/ConfigMap:guestbook/guestbook-config';

describe('fromArgoCdConfigMap', () => {
  it('defaults to annotation tracking and the standard instance label', () => {
    expect(fromArgoCdConfigMap(undefined)).toEqual(DEFAULT_TRACKING);
    expect(fromArgoCdConfigMap(cm())).toEqual({
      method: 'annotation',
      instanceLabelKey: 'app.kubernetes.io/instance',
    });
    expect(fromArgoCdConfigMap(cm({ 'application.resourceTrackingMethod': '' })).method).toBe('annotation');
  });

  it('reads every tracking method and a custom instance label key', () => {
    expect(
      fromArgoCdConfigMap(
        cm({
          'application.resourceTrackingMethod': 'label',
          'application.instanceLabelKey': 'argocd.example.com/app',
        }),
      ),
    ).toEqual({ method: 'label', instanceLabelKey: 'argocd.example.com/app' });
    expect(
      fromArgoCdConfigMap(cm({ 'application.resourceTrackingMethod': ' annotation+label\n' })).method,
    ).toBe('annotation+label');
    expect(fromArgoCdConfigMap(cm({ 'application.resourceTrackingMethod': 'annotation' })).method).toBe(
      'annotation',
    );
  });

  it('falls back to the default for unknown methods instead of switching filtering off', () => {
    expect(fromArgoCdConfigMap(cm({ 'application.resourceTrackingMethod': 'Label' })).method).toBe(
      'annotation',
    );
    expect(fromArgoCdConfigMap(cm({ 'application.resourceTrackingMethod': 'none' })).method).toBe(
      'annotation',
    );
  });

  it('reads installationID', () => {
    expect(fromArgoCdConfigMap(cm({ installationID: 'prod-eu' })).installationId).toBe('prod-eu');
  });
});

describe('isTracked', () => {
  const annotation: TrackingConfig = { method: 'annotation', instanceLabelKey: 'app.kubernetes.io/instance' };
  const both: TrackingConfig = { ...annotation, method: 'annotation+label' };
  const label: TrackingConfig = { method: 'label', instanceLabelKey: 'argocd.example.com/app' };

  it('annotation tracking reads argocd.argoproj.io/tracking-id', () => {
    expect(isTracked(obj({ 'argocd.argoproj.io/tracking-id': ID }), annotation)).toBe(true);
    expect(isTracked(obj(undefined, { 'app.kubernetes.io/instance': 'guestbook' }), annotation)).toBe(false);
    expect(isTracked(obj(), annotation)).toBe(false);
  });

  it('annotation+label tracks by the annotation; the label alone does not count', () => {
    expect(
      isTracked(
        obj({ 'argocd.argoproj.io/tracking-id': ID }, { 'app.kubernetes.io/instance': 'guestbook' }),
        both,
      ),
    ).toBe(true);
    expect(isTracked(obj({ 'argocd.argoproj.io/tracking-id': ID }), both)).toBe(true);
    expect(isTracked(obj(undefined, { 'app.kubernetes.io/instance': 'guestbook' }), both)).toBe(false);
  });

  it('label tracking reads the configured instance label key only', () => {
    expect(isTracked(obj(undefined, { 'argocd.example.com/app': 'guestbook' }), label)).toBe(true);
    expect(isTracked(obj(undefined, { 'app.kubernetes.io/instance': 'guestbook' }), label)).toBe(false);
    expect(isTracked(obj({ 'argocd.argoproj.io/tracking-id': ID }), label)).toBe(false);
    expect(isTracked(obj(undefined, { 'argocd.example.com/app': '' }), label)).toBe(false);
  });

  it('ignores empty or unparseable tracking ids, as Argo CD does', () => {
    for (const bad of [
      '',
      '   ',
      'guestbook',
      'guestbook:apps/Deployment',
      'a:b:c',
      ':apps/Deployment:ns/name',
    ]) {
      expect(isTracked(obj({ 'argocd.argoproj.io/tracking-id': bad }), annotation), bad).toBe(false);
    }
    expect(
      isTracked(
        obj({ 'argocd.argoproj.io/tracking-id': 'guestbook:rbac.authorization.k8s.io/ClusterRole:/view' }),
        annotation,
      ),
    ).toBe(true);
  });

  it('requires a matching installation id when one is configured', () => {
    const cfg = { ...annotation, installationId: 'prod-eu' };
    expect(isTracked(obj({ 'argocd.argoproj.io/tracking-id': ID }), cfg)).toBe(false);
    expect(
      isTracked(
        obj({ 'argocd.argoproj.io/tracking-id': ID, 'argocd.argoproj.io/installation-id': 'prod-eu' }),
        cfg,
      ),
    ).toBe(true);
    expect(
      isTracked(
        obj({ 'argocd.argoproj.io/tracking-id': ID, 'argocd.argoproj.io/installation-id': 'dev' }),
        cfg,
      ),
    ).toBe(false);
  });

  it('is false for anything without metadata', () => {
    for (const v of [null, undefined, 42, 'x', [], {}, { metadata: 'x' }])
      expect(isTracked(v, annotation)).toBe(false);
  });
});

describe('parseTrackingId', () => {
  it('splits app, group/kind and namespace/name', () => {
    expect(parseTrackingId('guestbook:apps/Deployment:guestbook/guestbook-ui')).toEqual({
      app: 'guestbook',
      group: 'apps',
      kind: 'Deployment',
      namespace: 'guestbook',
      name: 'guestbook-ui',
    });
    expect(parseTrackingId(ID)?.group).toBe('');
    expect(parseTrackingId('x')).toBeUndefined();
  });
});
