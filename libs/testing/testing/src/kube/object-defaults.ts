import { randomUUID } from 'node:crypto';
import type { ResourceType } from './resource-registry.js';
import { apiVersionOf } from './resource-registry.js';
import { errors, type StatusCause } from './status.js';
import { deepEqual, isPlainObject, type KubeObject, kubeTimestamp } from './types.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Types whose names must be DNS labels (they become DNS names or path segments). */
const LABEL_NAMED = new Set(['Namespace', 'Service']);

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export function randomSuffix(length = 5): string {
  let out = '';
  for (let i = 0; i < length; i++)
    out += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
  return out;
}

/** Generation is tracked for workload and custom resources (named groups), not core ones. */
export function tracksGeneration(type: ResourceType): boolean {
  return type.group !== '';
}

export function validateName(type: ResourceType, name: string | undefined): void {
  const causes: StatusCause[] = [];
  if (!name) {
    causes.push({
      type: 'FieldValueRequired',
      message: 'Required value: name or generateName is required',
      field: 'metadata.name',
    });
  } else if (LABEL_NAMED.has(type.kind)) {
    if (!DNS_LABEL.test(name) || name.length > 63) {
      causes.push({
        type: 'FieldValueInvalid',
        message: `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`,
        field: 'metadata.name',
      });
    }
  } else if (!DNS_SUBDOMAIN.test(name) || name.length > 253) {
    causes.push({
      type: 'FieldValueInvalid',
      message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
      field: 'metadata.name',
    });
  }
  if (causes.length > 0) throw errors.invalid(type.kind, type.group, name ?? '', causes);
}

/** Checks apiVersion/kind of a request body against the URL's resource type, filling them in when absent. */
export function checkTypeMeta(type: ResourceType, body: KubeObject): void {
  const expected = apiVersionOf(type);
  if (body.apiVersion !== undefined && body.apiVersion !== expected) {
    throw errors.badRequest(
      `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${expected})`,
    );
  }
  if (body.kind !== undefined && body.kind !== type.kind) {
    throw errors.badRequest(
      `the kind in the data (${String(body.kind)}) does not match the expected kind (${type.kind})`,
    );
  }
  body.apiVersion = expected;
  body.kind = type.kind;
}

let nextClusterIp = 1;

/** Defaults the API server (or its admission chain) would fill in on create. */
export function applyCreateDefaults(type: ResourceType, obj: KubeObject, rv: number): void {
  const meta = obj.metadata;
  meta.uid = randomUUID();
  meta.creationTimestamp = kubeTimestamp();
  meta.resourceVersion = String(rv);
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  if (tracksGeneration(type)) meta.generation = 1;
  else delete meta.generation;
  if (type.kind === 'Service' && isPlainObject(obj.spec)) {
    const spec = obj.spec;
    spec.type ??= 'ClusterIP';
    if (spec.type !== 'ExternalName' && spec.clusterIP === undefined) {
      const n = nextClusterIp++;
      spec.clusterIP = `10.96.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
      spec.clusterIPs = [spec.clusterIP];
    }
    if (Array.isArray(spec.ports)) {
      for (const port of spec.ports) {
        if (!isPlainObject(port)) continue;
        port.protocol ??= 'TCP';
        port.targetPort ??= port.port;
      }
    }
  }
}

/** Whether anything outside metadata and status changed (bumps metadata.generation). */
export function specChanged(before: KubeObject, after: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const { metadata: _m, status: _s, ...rest } = o;
    return rest;
  };
  return !deepEqual(strip(before), strip(after));
}
