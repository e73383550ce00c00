import { getOrCreateCounter, getOrCreateGauge } from '@pullplane/telemetry';
import type { Registry } from 'prom-client';
import type { Material } from './material-source.js';

/**
 * Publishes a service's material on `registry`, kept current through rotations:
 * `pullplane_certificate_expiry_timestamp_seconds{service,kind}` (a certificate's or CA
 * bundle's earliest notAfter: alert on `- time() < 14d`),
 * `pullplane_material_loaded_timestamp_seconds{service,kind}` (when the material in use was
 * read: the age of signing keys, which carry no expiry), and
 * `pullplane_material_reload_failures_total{service,kind}` (a new file or Secret that could not
 * be used; the previous material is still served).
 */
export function observeMaterials(
  materials: readonly Material<unknown>[],
  registry: Registry,
  service: string,
): void {
  const expiry = getOrCreateGauge(registry, {
    name: 'certificate_expiry_timestamp_seconds',
    help: 'When the certificate (or the first certificate of a CA bundle) in use expires, as a Unix time.',
    labelNames: ['service', 'kind'],
  });
  const loaded = getOrCreateGauge(registry, {
    name: 'material_loaded_timestamp_seconds',
    help: 'When the certificate, CA or signing key in use was read from its file or Secret, as a Unix time.',
    labelNames: ['service', 'kind'],
  });
  const failures = getOrCreateCounter(registry, {
    name: 'material_reload_failures_total',
    help: 'Changed certificates, CAs or signing keys that could not be used (the previous ones are kept).',
    labelNames: ['service', 'kind'],
  });
  for (const m of materials) {
    const labels = { service, kind: m.kind };
    const update = () => {
      const at = m.expiresAt;
      if (at) expiry.set(labels, Math.floor(at.getTime() / 1000));
      if (m.loadedAt) loaded.set(labels, m.loadedAt.getTime() / 1000);
    };
    update();
    m.onChange(update);
    failures.inc(labels, 0);
    m.onFailure(() => failures.inc(labels));
  }
}
