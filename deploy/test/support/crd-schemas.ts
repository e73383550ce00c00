// JSON Schemas for the custom resources that have no model package: Linkerd's policy.linkerd.io
// kinds, the Prometheus Operator's ServiceMonitor and PrometheusRule, and OpenShift's Route. Written from the CRDs' documented fields,
// closed (additionalProperties: false) so a misspelt field fails.
import type { AnySchema } from 'ajv';

const objectMeta: AnySchema = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', maxLength: 253 },
    namespace: { type: 'string' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    annotations: { type: 'object', additionalProperties: { type: 'string' } },
  },
  additionalProperties: false,
};

const labelSelector: AnySchema = {
  type: 'object',
  properties: {
    matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    matchExpressions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['key', 'operator'],
        properties: {
          key: { type: 'string' },
          operator: { enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
          values: { type: 'array', items: { type: 'string' } },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

const resource = (apiVersion: string, kind: string, spec: AnySchema): AnySchema => ({
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { const: apiVersion },
    kind: { const: kind },
    metadata: objectMeta,
    spec,
  },
  additionalProperties: false,
});

const portNumberOrName: AnySchema = {
  oneOf: [
    { type: 'integer', minimum: 1, maximum: 65535 },
    { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 15 },
  ],
};

/** policy.linkerd.io Server: v1beta1 (podSelector), v1beta3 (also externalWorkloadSelector, accessPolicy). */
const serverSpec = (version: 'v1beta1' | 'v1beta3'): AnySchema => ({
  type: 'object',
  required: ['port'],
  properties: {
    podSelector: labelSelector,
    ...(version === 'v1beta3'
      ? {
          externalWorkloadSelector: labelSelector,
          accessPolicy: {
            enum: [
              'deny',
              'all-authenticated',
              'all-unauthenticated',
              'cluster-authenticated',
              'cluster-unauthenticated',
              'audit',
            ],
          },
        }
      : {}),
    port: portNumberOrName,
    proxyProtocol: { enum: ['unknown', 'HTTP/1', 'HTTP/2', 'gRPC', 'opaque', 'TLS'] },
  },
  // Exactly one workload selector.
  oneOf: [{ required: ['podSelector'] }, { required: ['externalWorkloadSelector'] }],
  additionalProperties: false,
});

const targetRef: AnySchema = {
  type: 'object',
  required: ['kind', 'name'],
  properties: {
    group: { type: 'string' },
    kind: { type: 'string' },
    name: { type: 'string' },
    namespace: { type: 'string' },
  },
  additionalProperties: false,
};

const authorizationPolicySpec: AnySchema = {
  type: 'object',
  required: ['targetRef', 'requiredAuthenticationRefs'],
  properties: {
    targetRef: {
      ...targetRef,
      properties: {
        ...(targetRef as { properties: object }).properties,
        kind: { enum: ['Server', 'HTTPRoute', 'GRPCRoute', 'Namespace'] },
      },
    },
    requiredAuthenticationRefs: {
      type: 'array',
      items: {
        ...targetRef,
        properties: {
          ...(targetRef as { properties: object }).properties,
          kind: { enum: ['MeshTLSAuthentication', 'NetworkAuthentication', 'ServiceAccount'] },
        },
      },
    },
  },
  additionalProperties: false,
};

const meshTLSAuthenticationSpec: AnySchema = {
  type: 'object',
  properties: {
    identities: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
    identityRefs: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['kind'],
        properties: {
          group: { type: 'string' },
          kind: { enum: ['ServiceAccount', 'Namespace'] },
          name: { type: 'string' },
          namespace: { type: 'string' },
        },
        additionalProperties: false,
      },
    },
  },
  // Exactly one of the two.
  oneOf: [{ required: ['identities'] }, { required: ['identityRefs'] }],
  additionalProperties: false,
};

const networkAuthenticationSpec: AnySchema = {
  type: 'object',
  required: ['networks'],
  properties: {
    networks: {
      type: 'array',
      items: {
        type: 'object',
        required: ['cidr'],
        properties: { cidr: { type: 'string' }, except: { type: 'array', items: { type: 'string' } } },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

const serviceMonitorSpec: AnySchema = {
  type: 'object',
  required: ['selector', 'endpoints'],
  properties: {
    jobLabel: { type: 'string' },
    selector: labelSelector,
    namespaceSelector: {
      type: 'object',
      properties: { any: { type: 'boolean' }, matchNames: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
    endpoints: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: {
          port: { type: 'string' },
          targetPort: portNumberOrName,
          path: { type: 'string', pattern: '^/' },
          scheme: { enum: ['http', 'https'] },
          interval: { type: 'string', pattern: '^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$' },
          scrapeTimeout: { type: 'string' },
          honorLabels: { type: 'boolean' },
        },
        oneOf: [{ required: ['port'] }, { required: ['targetPort'] }],
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

/**
 * route.openshift.io/v1 Route (OpenShift's router): the host it answers for, the Service and its
 * port it sends to, and how TLS is handled (passthrough: the router forwards by SNI, TLS stays
 * end to end).
 */
const routeTarget: AnySchema = {
  type: 'object',
  required: ['kind', 'name'],
  properties: {
    kind: { enum: ['Service', ''] },
    name: { type: 'string', minLength: 1 },
    weight: { type: 'integer', minimum: 0, maximum: 256 },
  },
  additionalProperties: false,
};
const routeSpec: AnySchema = {
  type: 'object',
  required: ['to'],
  properties: {
    host: {
      type: 'string',
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      maxLength: 253,
    },
    subdomain: { type: 'string' },
    path: { type: 'string', pattern: '^/' },
    to: routeTarget,
    alternateBackends: { type: 'array', maxItems: 3, items: routeTarget },
    port: {
      type: 'object',
      required: ['targetPort'],
      properties: { targetPort: portNumberOrName },
      additionalProperties: false,
    },
    tls: {
      type: 'object',
      required: ['termination'],
      properties: {
        termination: { enum: ['edge', 'passthrough', 'reencrypt'] },
        insecureEdgeTerminationPolicy: { enum: ['Allow', 'None', 'Redirect', ''] },
        certificate: { type: 'string' },
        key: { type: 'string' },
        caCertificate: { type: 'string' },
        destinationCACertificate: { type: 'string' },
        externalCertificate: {
          type: 'object',
          properties: { name: { type: 'string' } },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    wildcardPolicy: { enum: ['None', 'Subdomain'] },
  },
  additionalProperties: false,
};

/** apiVersion/kind → schema. */
/** Prometheus' duration syntax (`5m`, `1h30m`), as the PrometheusRule CRD validates it. */
const promDuration: AnySchema = {
  type: 'string',
  pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$',
};
const stringMap: AnySchema = { type: 'object', additionalProperties: { type: 'string' } };

/** monitoring.coreos.com/v1 PrometheusRule: groups of alerting or recording rules (exactly one of the two). */
const prometheusRuleSpec: AnySchema = {
  type: 'object',
  properties: {
    groups: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1 },
          interval: promDuration,
          query_offset: promDuration,
          limit: { type: 'integer' },
          partial_response_strategy: { enum: ['', 'abort', 'warn', 'Abort', 'Warn', 'ABORT', 'WARN'] },
          labels: stringMap,
          rules: {
            type: 'array',
            items: {
              type: 'object',
              required: ['expr'],
              oneOf: [{ required: ['alert'] }, { required: ['record'] }],
              properties: {
                alert: { type: 'string' },
                record: { type: 'string' },
                expr: { anyOf: [{ type: 'integer' }, { type: 'string', minLength: 1 }] },
                for: promDuration,
                keep_firing_for: { type: 'string', minLength: 1, pattern: promDuration.pattern },
                labels: stringMap,
                annotations: stringMap,
              },
              additionalProperties: false,
            },
          },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

export const crdSchemas: Record<string, AnySchema> = {
  'policy.linkerd.io/v1beta1/Server': resource('policy.linkerd.io/v1beta1', 'Server', serverSpec('v1beta1')),
  'policy.linkerd.io/v1beta3/Server': resource('policy.linkerd.io/v1beta3', 'Server', serverSpec('v1beta3')),
  'policy.linkerd.io/v1alpha1/AuthorizationPolicy': resource(
    'policy.linkerd.io/v1alpha1',
    'AuthorizationPolicy',
    authorizationPolicySpec,
  ),
  'policy.linkerd.io/v1alpha1/MeshTLSAuthentication': resource(
    'policy.linkerd.io/v1alpha1',
    'MeshTLSAuthentication',
    meshTLSAuthenticationSpec,
  ),
  'policy.linkerd.io/v1alpha1/NetworkAuthentication': resource(
    'policy.linkerd.io/v1alpha1',
    'NetworkAuthentication',
    networkAuthenticationSpec,
  ),
  'monitoring.coreos.com/v1/PrometheusRule': resource(
    'monitoring.coreos.com/v1',
    'PrometheusRule',
    prometheusRuleSpec,
  ),
  'route.openshift.io/v1/Route': resource('route.openshift.io/v1', 'Route', routeSpec),
  'monitoring.coreos.com/v1/ServiceMonitor': resource(
    'monitoring.coreos.com/v1',
    'ServiceMonitor',
    serviceMonitorSpec,
  ),
};
