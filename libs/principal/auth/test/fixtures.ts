import {
  type HeaderAuthMethod,
  type MeshPinning,
  parseAuthMethod,
  UNPINNED_PRESET_SPECS,
} from '../src/index.js';

/** Header values in the exact shapes Istio's Envoy and Linkerd's proxy produce. */
export const HASH_A = 'd2b9f4b1c3a7e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f';
export const HASH_B = '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0';
export const PRINCIPAL = 'spiffe://cluster.local/ns/argocd/sa/argocd-agent-principal';
export const INGRESS = 'spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';

export const spiffe = (sa: string, ns = 'argocd', td = 'cluster.local'): string =>
  `spiffe://${td}/ns/${ns}/sa/${sa}`;

/** What an Istio sidecar appends for a client with service account `sa`. */
export const istioElement = (sa: string, by = PRINCIPAL, hash = HASH_A): string =>
  `By=${by};Hash=${hash};Subject="";URI=${spiffe(sa)}`;

export const ISTIO_AGENT_A = istioElement('agent-a');

/** APPEND_FORWARD with a client that sent its own (forged) XFCC: the sidecar's element comes last. */
export const ISTIO_FORGED_THEN_REAL = `By=${PRINCIPAL};URI=${spiffe('evil')},${ISTIO_AGENT_A}`;

/** APPEND_FORWARD through an ingress gateway: the nearest hop's client is the gateway itself. */
export const ISTIO_VIA_INGRESS = `${istioElement('agent-b', INGRESS, HASH_B)},By=${PRINCIPAL};Hash=${HASH_A};Subject="";URI=${INGRESS}`;

export const LINKERD_AGENT_A = 'agent-a.argocd.serviceaccount.identity.linkerd.cluster.local';

/** Where the fixtures' agents live: the presets are pinned to it unless told otherwise. */
export const ARGOCD_PIN: MeshPinning = { trustDomain: 'cluster.local', namespaces: ['argocd'] };

export const headerMethod = (spec: string, mesh: MeshPinning = ARGOCD_PIN): HeaderAuthMethod => {
  const method = parseAuthMethod(spec, { mesh });
  if (method.kind !== 'header') throw new Error(`${spec} is not a header method`);
  return method;
};

/** The seed's unpinned expansions, which operators may still pass explicitly as header:…. */
export const SEED_ISTIO = headerMethod(UNPINNED_PRESET_SPECS.istio);
export const SEED_LINKERD = headerMethod(UNPINNED_PRESET_SPECS.linkerd);
