// Validates rendered objects against their schemas: kubernetes-models for the built-in kinds
// (plus a closed-world field check from @kubernetes/client-node's type maps, since the OpenAPI
// schemas allow unknown fields), @kubernetes-models/istio for Istio kinds, and the JSON Schemas
// in crd-schemas.ts for Linkerd and the Prometheus Operator. Unknown kinds are errors.

import * as k8s from '@kubernetes/client-node';
import { DestinationRule, Sidecar } from '@kubernetes-models/istio/networking.istio.io/v1beta1';
import { AuthorizationPolicy, PeerAuthentication } from '@kubernetes-models/istio/security.istio.io/v1beta1';
import { Ajv } from 'ajv';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { crdSchemas } from './crd-schemas.js';
import type { K8sObject } from './render.js';

type Model = new (data: never) => { validate(): void };

/** apiVersion/kind → model; `typeName` names the client-node class for the closed-world check. */
const models: Record<string, { model: Model; typeName?: string }> = {
  'v1/ConfigMap': { model: ConfigMap, typeName: 'V1ConfigMap' },
  'v1/Secret': { model: Secret, typeName: 'V1Secret' },
  'v1/Service': { model: Service, typeName: 'V1Service' },
  'v1/ServiceAccount': { model: ServiceAccount, typeName: 'V1ServiceAccount' },
  'apps/v1/Deployment': { model: Deployment, typeName: 'V1Deployment' },
  'apps/v1/StatefulSet': { model: StatefulSet, typeName: 'V1StatefulSet' },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    model: HorizontalPodAutoscaler,
    typeName: 'V2HorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget, typeName: 'V1PodDisruptionBudget' },
  'networking.k8s.io/v1/NetworkPolicy': { model: NetworkPolicy, typeName: 'V1NetworkPolicy' },
  'rbac.authorization.k8s.io/v1/Role': { model: Role, typeName: 'V1Role' },
  'rbac.authorization.k8s.io/v1/RoleBinding': { model: RoleBinding, typeName: 'V1RoleBinding' },
  'rbac.authorization.k8s.io/v1/ClusterRole': { model: ClusterRole, typeName: 'V1ClusterRole' },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': {
    model: ClusterRoleBinding,
    typeName: 'V1ClusterRoleBinding',
  },
  'networking.istio.io/v1beta1/DestinationRule': { model: DestinationRule },
  'networking.istio.io/v1beta1/Sidecar': { model: Sidecar },
  'security.istio.io/v1beta1/AuthorizationPolicy': { model: AuthorizationPolicy },
  'security.istio.io/v1beta1/PeerAuthentication': { model: PeerAuthentication },
};

const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false });
const crdValidators = Object.fromEntries(Object.entries(crdSchemas).map(([k, s]) => [k, ajv.compile(s)]));

/** Problems of one object (empty: valid). */
export function validateObject(o: K8sObject): string[] {
  const id = `${o.apiVersion}/${o.kind}`;
  const entry = models[id];
  if (entry) {
    try {
      new entry.model(o as never).validate();
    } catch (err) {
      return [String((err as Error).message)];
    }
    return entry.typeName ? unknownFields(o, entry.typeName, '') : [];
  }
  const crd = crdValidators[id];
  if (crd) {
    return crd(o)
      ? []
      : (crd.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  }
  return [`unknown kind ${id}: no schema to validate it against`];
}

type AttributeType = { baseName: string; type: string };
const typeMaps = k8s as unknown as Record<string, { attributeTypeMap?: AttributeType[] } | undefined>;

/** Fields the Kubernetes API does not know (misspellings would otherwise pass validation). */
function unknownFields(value: unknown, type: string, path: string): string[] {
  if (value === null || value === undefined) return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array)
    return Array.isArray(value) ? value.flatMap((v, i) => unknownFields(v, array[1]!, `${path}/${i}`)) : [];
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    return typeof value === 'object'
      ? Object.entries(value as object).flatMap(([k, v]) => unknownFields(v, map[1]!, `${path}/${k}`))
      : [];
  }
  const attributes = typeMaps[type]?.attributeTypeMap;
  if (!attributes || typeof value !== 'object') return [];
  const problems: string[] = [];
  for (const [k, v] of Object.entries(value as object)) {
    const attr = attributes.find((a) => a.baseName === k);
    if (!attr) problems.push(`${path}/${k}: unknown field of ${type}`);
    else problems.push(...unknownFields(v, attr.type, `${path}/${k}`));
  }
  return problems;
}
