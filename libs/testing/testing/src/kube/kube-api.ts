import { randomUUID } from 'node:crypto';
import { addCustomResource, crdStatus, customResourceFromCrd } from './builtin-resources.js';
import { recordUpdate, serverSideApply } from './managed-fields.js';
import {
  applyCreateDefaults,
  checkTypeMeta,
  randomSuffix,
  specChanged,
  tracksGeneration,
  validateName,
} from './object-defaults.js';
import type { ObjectStore } from './object-store.js';
import { parseAppliedConfig, patchObject } from './patch-body.js';
import type { PodLogs } from './pod-logs.js';
import { apiVersionOf, type ResourceRegistry, type ResourceType, typeKey } from './resource-registry.js';
import { admitSecret } from './secret-data.js';
import { errors } from './status.js';
import { clone, deepEqual, isPlainObject, type KubeObject, kubeTimestamp } from './types.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export const PATCH_CONTENT_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
};

export interface WriteOptions {
  /** Field manager recorded in managedFields (query `fieldManager`, else derived from User-Agent). */
  manager?: string | undefined;
  dryRun?: boolean | undefined;
  /** `status` for writes through the status subresource. */
  subresource?: string | undefined;
}

export interface PatchOptions extends WriteOptions {
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean | undefined;
  /** Whether the fieldManager query parameter was given (required for apply). */
  explicitManager?: boolean | undefined;
}

export interface DeleteOptions {
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground' | undefined;
  dryRun?: boolean | undefined;
  preconditions?: { uid?: string | undefined; resourceVersion?: string | undefined } | undefined;
}

/**
 * API semantics on top of the object store: validation, defaults, optimistic
 * concurrency, status-subresource rules, patches, managed fields, finalizers and
 * garbage collection of dependents. HTTP handlers and the test-facing store share it.
 */
export class KubeApi {
  constructor(
    readonly registry: ResourceRegistry,
    readonly store: ObjectStore,
    readonly logs: PodLogs,
    /** Admission a real server applies that tests may switch off: Secret data encoding. */
    readonly strict = true,
  ) {}

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const obj = this.store.get(type, namespace, name);
    if (!obj) throw errors.notFound(type.resource, type.group, name);
    return obj;
  }

  create(
    type: ResourceType,
    namespace: string | undefined,
    body: unknown,
    opts: WriteOptions = {},
  ): KubeObject {
    if (!isPlainObject(body)) throw errors.badRequest('the request body must be a JSON object');
    const obj = clone(body) as KubeObject;
    checkTypeMeta(type, obj);
    return this.insert(type, namespace, obj, opts, false);
  }

  private insert(
    type: ResourceType,
    namespace: string | undefined,
    obj: KubeObject,
    opts: WriteOptions,
    managedFieldsDone: boolean,
  ): KubeObject {
    obj.metadata = isPlainObject(obj.metadata) ? obj.metadata : {};
    const meta = obj.metadata;
    if (type.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw errors.badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      meta.namespace = namespace ?? meta.namespace;
      if (!meta.namespace) throw errors.badRequest('a namespace is required for namespaced resources');
      this.requireNamespace(meta.namespace);
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) {
      do meta.name = `${meta.generateName}${randomSuffix()}`;
      while (this.store.get(type, meta.namespace, meta.name));
    }
    validateName(type, meta.name);
    const name = meta.name!;
    if (this.store.get(type, meta.namespace, name))
      throw errors.alreadyExists(type.resource, type.group, name);
    if (type.initialStatus) obj.status = type.initialStatus();
    if (type.kind === 'CustomResourceDefinition') obj.status = crdStatus(obj);
    applyCreateDefaults(type, obj, this.store.currentRv() + 1);
    this.admit(type, obj);
    const stored = managedFieldsDone ? obj : recordUpdate(undefined, obj, this.updateOpts(type, opts));
    if (opts.dryRun) {
      delete stored.metadata.resourceVersion;
      return stored;
    }
    stored.metadata.resourceVersion = String(this.store.nextRv());
    this.store.commit(type, 'ADDED', stored);
    this.afterCommit(type, stored, false);
    return stored;
  }

  update(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    opts: WriteOptions = {},
  ) {
    if (!isPlainObject(body)) throw errors.badRequest('the request body must be a JSON object');
    const candidate = clone(body) as KubeObject;
    checkTypeMeta(type, candidate);
    candidate.metadata = isPlainObject(candidate.metadata) ? candidate.metadata : {};
    if (candidate.metadata.name !== undefined && candidate.metadata.name !== name) {
      throw errors.badRequest(
        `the name of the object (${candidate.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    if (type.namespaced && candidate.metadata.namespace && candidate.metadata.namespace !== namespace) {
      throw errors.badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    const prev = this.get(type, namespace, name);
    if (!type.strategicMergePatch && !candidate.metadata.resourceVersion) {
      // Custom resources do not allow unconditional updates.
      throw errors.invalid(type.kind, type.group, name, [
        {
          type: 'FieldValueInvalid',
          message: 'Invalid value: 0x0: must be specified for an update',
          field: 'metadata.resourceVersion',
        },
      ]);
    }
    return this.commitUpdate(type, prev, candidate, opts, false);
  }

  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patchType: PatchType,
    rawBody: string,
    opts: PatchOptions = {},
  ): { object: KubeObject; created: boolean } {
    if (patchType === 'strategic' && !type.strategicMergePatch) {
      throw errors.unsupportedMediaType('application/strategic-merge-patch+json', [
        'application/json-patch+json',
        'application/merge-patch+json',
        'application/apply-patch+yaml',
      ]);
    }
    if (patchType === 'apply') return this.apply(type, namespace, name, rawBody, opts);
    const prev = this.get(type, namespace, name);
    const candidate = patchObject(type, prev, patchType, rawBody);
    return { object: this.commitUpdate(type, prev, candidate, opts, false), created: false };
  }

  private apply(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    rawBody: string,
    opts: PatchOptions,
  ): { object: KubeObject; created: boolean } {
    if (!opts.explicitManager || !opts.manager) {
      throw errors.badRequest('PATCH requests with apply content type require fieldManager query parameter');
    }
    const config = parseAppliedConfig(type, name, rawBody);
    const prev = this.store.get(type, namespace, name);
    const applyOpts = {
      manager: opts.manager,
      force: opts.force ?? false,
      apiVersion: apiVersionOf(type),
      subresource: opts.subresource,
    };
    const merged = serverSideApply(prev, config, applyOpts);
    if (!prev) return { object: this.insert(type, namespace, merged, opts, true), created: true };
    return { object: this.commitUpdate(type, prev, merged, opts, true), created: false };
  }

  /** The common tail of update and patch: preconditions, immutable fields, generation, no-op detection. */
  commitUpdate(
    type: ResourceType,
    prev: KubeObject,
    candidateIn: KubeObject,
    opts: WriteOptions,
    managedFieldsDone: boolean,
  ): KubeObject {
    let candidate = candidateIn;
    const name = prev.metadata.name ?? '';
    const sentRv = candidate.metadata.resourceVersion;
    if (sentRv !== undefined && sentRv !== '' && sentRv !== prev.metadata.resourceVersion) {
      throw errors.conflict(
        type.resource,
        type.group,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    if (type.subresources.includes('status')) {
      if (opts.subresource === 'status') {
        const status = candidate.status;
        candidate = { ...clone(prev), status };
        if (status === undefined) delete candidate.status;
        candidate.metadata.managedFields = candidateIn.metadata.managedFields ?? prev.metadata.managedFields;
      } else if (prev.status !== undefined) candidate.status = clone(prev.status);
      else delete candidate.status;
    }
    const meta = candidate.metadata;
    for (const key of [
      'name',
      'namespace',
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
    ]) {
      if (prev.metadata[key] === undefined) delete meta[key];
      else meta[key] = prev.metadata[key];
    }
    if (tracksGeneration(type)) {
      meta.generation = (prev.metadata.generation ?? 1) + (specChanged(prev, candidate) ? 1 : 0);
    }
    meta.resourceVersion = prev.metadata.resourceVersion;
    this.admit(type, candidate);
    const next = managedFieldsDone ? candidate : recordUpdate(prev, candidate, this.updateOpts(type, opts));
    if (deepEqual(next, prev)) return prev;
    if (opts.dryRun) return next;
    if (prev.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      return this.finalizeDelete(type, next, prev, 'Background');
    }
    next.metadata.resourceVersion = String(this.store.nextRv());
    this.store.commit(type, 'MODIFIED', next, prev);
    this.afterCommit(type, next, false);
    return next;
  }

  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): { object: KubeObject; deferred: boolean } {
    const prev = this.get(type, namespace, name);
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== prev.metadata.uid) {
      throw errors.conflict(
        type.resource,
        type.group,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${prev.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== prev.metadata.resourceVersion) {
      throw errors.conflict(
        type.resource,
        type.group,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${prev.metadata.resourceVersion}`,
      );
    }
    if (opts.dryRun) return { object: prev, deferred: false };
    if ((prev.metadata.finalizers ?? []).length > 0) {
      if (prev.metadata.deletionTimestamp) return { object: prev, deferred: true };
      const next = clone(prev);
      next.metadata.deletionTimestamp = kubeTimestamp();
      next.metadata.deletionGracePeriodSeconds = 0;
      next.metadata.resourceVersion = String(this.store.nextRv());
      this.store.commit(type, 'MODIFIED', next, prev);
      return { object: next, deferred: true };
    }
    return {
      object: this.finalizeDelete(type, prev, prev, opts.propagationPolicy ?? 'Background'),
      deferred: false,
    };
  }

  /** Removes the object now and cascades: namespace contents, CRD instances, owned dependents. */
  private finalizeDelete(
    type: ResourceType,
    last: KubeObject,
    prev: KubeObject,
    policy: NonNullable<DeleteOptions['propagationPolicy']>,
  ): KubeObject {
    const deleted = clone(last);
    deleted.metadata.resourceVersion = String(this.store.nextRv());
    this.store.commit(type, 'DELETED', deleted, prev);
    const name = deleted.metadata.name ?? '';
    if (type.kind === 'Pod' && deleted.metadata.namespace)
      this.logs.forgetPod(deleted.metadata.namespace, name);
    if (type.kind === 'Namespace') {
      for (const t of this.registry.all()) {
        if (!t.namespaced) continue;
        for (const obj of this.store.list(t, name)) this.removeNow(t, obj);
      }
    }
    this.afterCommit(type, deleted, true);
    this.collectDependents(deleted, policy);
    return deleted;
  }

  private removeNow(type: ResourceType, obj: KubeObject): void {
    if (this.store.get(type, obj.metadata.namespace, obj.metadata.name ?? '') !== obj) return;
    this.finalizeDelete(type, obj, obj, 'Background');
  }

  /** The garbage collector, run synchronously: dependents whose owners are all gone are deleted (or orphaned). */
  private collectDependents(
    owner: KubeObject,
    policy: NonNullable<DeleteOptions['propagationPolicy']>,
  ): void {
    const uid = owner.metadata.uid;
    if (!uid) return;
    const dependents: [ResourceType, KubeObject][] = [];
    for (const [key, obj] of this.store.allObjects()) {
      if (!(obj.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid)) continue;
      const type = this.registry.all().find((t) => typeKey(t) === key);
      if (type) dependents.push([type, obj]);
    }
    for (const [type, obj] of dependents) {
      const current = this.store.get(type, obj.metadata.namespace, obj.metadata.name ?? '');
      if (!current) continue;
      const refs = current.metadata.ownerReferences ?? [];
      const others = refs.filter((ref) => ref.uid !== uid);
      const othersAlive = others.some((ref) => this.ownerExists(ref.uid));
      if (policy === 'Orphan' || othersAlive) {
        const next = clone(current);
        next.metadata.ownerReferences = others;
        if (others.length === 0) delete next.metadata.ownerReferences;
        this.commitUpdate(type, current, next, { manager: 'generic-garbage-collector' }, false);
      } else {
        try {
          this.delete(type, current.metadata.namespace, current.metadata.name ?? '', {
            propagationPolicy: 'Background',
          });
        } catch {
          // already gone through another owner chain
        }
      }
    }
  }

  private ownerExists(uid: string): boolean {
    for (const [, obj] of this.store.allObjects()) if (obj.metadata.uid === uid) return true;
    return false;
  }

  /** Keeps the registry in step with CustomResourceDefinition objects. */
  private afterCommit(type: ResourceType, obj: KubeObject, deleted: boolean): void {
    if (type.kind !== 'CustomResourceDefinition' || type.group !== 'apiextensions.k8s.io') return;
    const options = customResourceFromCrd(obj);
    if (!options) return;
    const plural = options.plural ?? `${options.kind.toLowerCase()}s`;
    if (deleted) {
      const crType = this.registry.all().find((t) => t.group === options.group && t.resource === plural);
      if (crType) for (const o of this.store.list(crType)) this.removeNow(crType, o);
      this.registry.remove(options.group, plural);
    } else addCustomResource(this.registry, options);
  }

  /** Decoding rules of built-in kinds the fake enforces (Secret `data` is bytes; `stringData` write-only). */
  private admit(type: ResourceType, obj: KubeObject): void {
    if (this.strict && type.group === '' && type.kind === 'Secret') admitSecret(obj);
  }

  private requireNamespace(namespace: string): void {
    const nsType = this.registry.byResource('', 'v1', 'namespaces');
    if (nsType && !this.store.get(nsType, undefined, namespace)) {
      throw errors.notFound('namespaces', '', namespace);
    }
  }

  private updateOpts(type: ResourceType, opts: WriteOptions) {
    return {
      manager: opts.manager ?? 'unknown',
      apiVersion: apiVersionOf(type),
      subresource: opts.subresource,
    };
  }

  // ---- test-facing helpers (no admission rules, status kept as given) ----

  /** Creates or replaces an object as given; a missing namespace is created. */
  put(input: KubeObject): KubeObject {
    const type = this.registry.require(input.apiVersion, input.kind);
    const obj = clone(input);
    obj.metadata = isPlainObject(obj.metadata) ? obj.metadata : {};
    const meta = obj.metadata;
    if (type.namespaced) {
      meta.namespace ??= 'default';
      this.ensureNamespace(meta.namespace);
    } else delete meta.namespace;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomSuffix()}`;
    if (!meta.name) throw new Error(`fake kube: put() needs metadata.name (${input.kind})`);
    const prev = this.store.get(type, meta.namespace, meta.name);
    if (prev) {
      meta.uid ??= prev.metadata.uid;
      meta.creationTimestamp ??= prev.metadata.creationTimestamp;
      if (tracksGeneration(type)) {
        meta.generation ??= (prev.metadata.generation ?? 1) + (specChanged(prev, obj) ? 1 : 0);
      }
    } else {
      meta.uid ??= randomUUID();
      meta.creationTimestamp ??= kubeTimestamp();
      if (tracksGeneration(type)) meta.generation ??= 1;
    }
    meta.resourceVersion = String(this.store.nextRv());
    this.store.commit(type, prev ? 'MODIFIED' : 'ADDED', obj, prev);
    this.afterCommit(type, obj, false);
    return clone(obj);
  }

  /** Deletes immediately (finalizers ignored), cascading to dependents. Returns false when absent. */
  remove(type: ResourceType, namespace: string | undefined, name: string): boolean {
    const obj = this.store.get(type, namespace, name);
    if (!obj) return false;
    this.finalizeDelete(type, obj, obj, 'Background');
    return true;
  }

  ensureNamespace(name: string): void {
    const nsType = this.registry.byResource('', 'v1', 'namespaces');
    if (!nsType || this.store.get(nsType, undefined, name)) return;
    this.put({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
  }
}
