/** How Argo CD marks the resources it manages (`application.resourceTrackingMethod`). */
export type TrackingMethod = 'annotation' | 'label' | 'annotation+label';

export interface TrackingConfig {
  method: TrackingMethod;
  /** Label read by the `label` method (`application.instanceLabelKey`). */
  instanceLabelKey: string;
  /** When set (`installationID`), annotation tracking also requires a matching installation-id annotation. */
  installationId?: string;
}

export const TRACKING_ID_ANNOTATION = 'argocd.argoproj.io/tracking-id';
export const INSTALLATION_ID_ANNOTATION = 'argocd.argoproj.io/installation-id';
export const DEFAULT_INSTANCE_LABEL_KEY = 'app.kubernetes.io/instance';
export const DEFAULT_TRACKING: Readonly<TrackingConfig> = Object.freeze({
  method: 'annotation',
  instanceLabelKey: DEFAULT_INSTANCE_LABEL_KEY,
});

const METHODS: ReadonlySet<string> = new Set<TrackingMethod>(['annotation', 'label', 'annotation+label']);

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function nonEmpty(v: unknown): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/**
 * Reads the tracking settings from an `argocd-cm` ConfigMap object. Missing or unknown values
 * fall back to Argo CD's defaults, as Argo CD itself does, so a typo never disables filtering.
 */
export function fromArgoCdConfigMap(cm: unknown): TrackingConfig {
  const data = record(record(cm)?.data) ?? {};
  const method = nonEmpty(data['application.resourceTrackingMethod']);
  const out: TrackingConfig = {
    method:
      method !== undefined && METHODS.has(method) ? (method as TrackingMethod) : DEFAULT_TRACKING.method,
    instanceLabelKey: nonEmpty(data['application.instanceLabelKey']) ?? DEFAULT_INSTANCE_LABEL_KEY,
  };
  const installationId = nonEmpty(data.installationID);
  if (installationId !== undefined) out.installationId = installationId;
  return out;
}

export interface TrackingId {
  app: string;
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/**
 * Parses `<app>:<group>/<kind>:<namespace>/<name>`. Argo CD ignores tracking ids it cannot
 * parse, so a bare or garbage annotation does not make an object managed here either.
 */
export function parseTrackingId(value: string): TrackingId | undefined {
  const parts = value.split(':');
  if (parts.length !== 3) return undefined;
  const gk = parts[1]!.split('/');
  const nn = parts[2]!.split('/');
  if (gk.length !== 2 || nn.length !== 2) return undefined;
  const [app, group, kind, namespace, name] = [parts[0]!, gk[0]!, gk[1]!, nn[0]!, nn[1]!];
  if (app === '' || kind === '' || name === '') return undefined;
  return { app, group, kind, namespace, name };
}

/** True when the object itself carries Argo CD tracking for the active method (owners not considered). */
export function isTracked(obj: unknown, tracking: TrackingConfig): boolean {
  const meta = record(record(obj)?.metadata);
  if (!meta) return false;
  if (tracking.method === 'label') {
    return nonEmpty(record(meta.labels)?.[tracking.instanceLabelKey]) !== undefined;
  }
  // 'annotation+label' tracks by annotation; the label is informational only.
  const annotations = record(meta.annotations);
  const id = nonEmpty(annotations?.[TRACKING_ID_ANNOTATION]);
  if (id === undefined || parseTrackingId(id) === undefined) return false;
  if (tracking.installationId !== undefined) {
    return annotations?.[INSTALLATION_ID_ANNOTATION] === tracking.installationId;
  }
  return true;
}
