// OpenShift's default SecurityContextConstraints for pods, restricted-v2 (OpenShift 4.11+), as
// it is defined:
//
//   allowHostDirVolumePlugin: false     allowHostIPC/Network/PID/Ports: false
//   allowPrivilegedContainer: false     allowPrivilegeEscalation: false
//   allowedCapabilities: [NET_BIND_SERVICE]   requiredDropCapabilities: [ALL]
//   runAsUser: MustRunAsRange           (the namespace's openshift.io/sa.scc.uid-range)
//   fsGroup: MustRunAs                  (the namespace's openshift.io/sa.scc.supplemental-groups)
//   seLinuxContext: MustRunAs           (the namespace's openshift.io/sa.scc.mcs)
//   supplementalGroups: RunAsAny        seccompProfiles: [runtime/default]
//   readOnlyRootFilesystem: false
//   volumes: configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, secret
//
// Admission fills in what a pod leaves unset (a UID and fsGroup from the ranges, the SELinux
// level, RuntimeDefault seccomp, the dropped capabilities, no privilege escalation) and refuses
// what contradicts the constraints. `refusals` says what a pod template sets that restricted-v2
// refuses: a UID or fsGroup outside the namespace's range (a fixed UID is: ranges are allocated
// per namespace, e.g. 1000680000/10000), SELinux options other than the namespace's, another
// seccomp profile, privilege, escalation, added capabilities beyond NET_BIND_SERVICE, host
// namespaces and ports, and volume types outside the list (hostPath above all).
import type { K8sObject } from './render.js';

// biome-ignore lint/suspicious/noExplicitAny: pod specs are untyped JSON.
type Json = any;

/** A namespace's allocation, as OpenShift annotates it (`<first>/<size>`). */
export interface NamespaceRanges {
  uidRange: string;
  supplementalGroups: string;
}

/** What OpenShift typically allocates a new project. */
export const TYPICAL_NAMESPACE: NamespaceRanges = {
  uidRange: '1000680000/10000',
  supplementalGroups: '1000680000/10000',
};

const VOLUME_TYPES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
const ALLOWED_CAPABILITIES = new Set(['NET_BIND_SERVICE']);

const inRange = (value: number, range: string) => {
  const [first, size] = range.split('/').map(Number) as [number, number];
  return value >= first && value < first + size;
};

/** What restricted-v2 refuses in a pod template (empty: admitted). */
export function refusals(pod: Json, ns: NamespaceRanges = TYPICAL_NAMESPACE): string[] {
  const out: string[] = [];
  const psc = pod.securityContext ?? {};
  if (pod.hostNetwork) out.push('hostNetwork');
  if (pod.hostPID) out.push('hostPID');
  if (pod.hostIPC) out.push('hostIPC');
  for (const v of pod.volumes ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name')!;
    if (!VOLUME_TYPES.has(type)) out.push(`volume ${v.name}: ${type} volumes are not allowed`);
  }
  if (psc.fsGroup !== undefined && !inRange(psc.fsGroup, ns.supplementalGroups))
    out.push(`fsGroup ${psc.fsGroup} is outside the namespace's range ${ns.supplementalGroups}`);
  const context = (sc: Json, where: string) => {
    if (sc.runAsUser !== undefined && !inRange(sc.runAsUser, ns.uidRange))
      out.push(`${where}runAsUser ${sc.runAsUser} is outside the namespace's range ${ns.uidRange}`);
    if (sc.seLinuxOptions !== undefined)
      out.push(`${where}seLinuxOptions: only the namespace's MCS level is allowed`);
    const seccomp = sc.seccompProfile?.type;
    if (seccomp !== undefined && seccomp !== 'RuntimeDefault')
      out.push(`${where}seccompProfile ${seccomp}: only runtime/default is allowed`);
  };
  context(psc, '');
  const annotations = (pod.metadata?.annotations ?? {}) as Record<string, string>;
  for (const [k, v] of Object.entries(annotations))
    if (k.startsWith('seccomp.security.alpha.kubernetes.io/') && v !== 'runtime/default')
      out.push(`annotation ${k}: ${v}: only runtime/default is allowed`);
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}: `;
    context(sc, where);
    if (sc.privileged) out.push(`${where}privileged`);
    if (sc.allowPrivilegeEscalation === true) out.push(`${where}allowPrivilegeEscalation`);
    for (const cap of sc.capabilities?.add ?? [])
      if (!ALLOWED_CAPABILITIES.has(cap)) out.push(`${where}capability ${cap}`);
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${where}hostPort ${p.hostPort}`);
  }
  return out;
}

/**
 * Beyond the SCC: what the bundles keep to so one manifest runs on both (OpenShift's arbitrary
 * UIDs and plain Kubernetes): no fixed UID, group or fsGroup (the images run as a numeric non-root
 * user in group 0, which OpenShift expects), non-root asserted, RuntimeDefault seccomp, no
 * escalation, every capability dropped, a read-only root filesystem.
 */
export function portabilityProblems(pod: Json): string[] {
  const out: string[] = [];
  const psc = pod.securityContext ?? {};
  for (const k of ['runAsUser', 'runAsGroup', 'fsGroup'])
    if (psc[k] !== undefined) out.push(`pod ${k} ${psc[k]} is fixed`);
  if (psc.runAsNonRoot !== true) out.push('pod runAsNonRoot is not true');
  if (psc.seccompProfile?.type !== 'RuntimeDefault') out.push('pod seccompProfile is not RuntimeDefault');
  for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}: `;
    for (const k of ['runAsUser', 'runAsGroup'])
      if (sc[k] !== undefined) out.push(`${where}${k} ${sc[k]} is fixed`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${where}allowPrivilegeEscalation is not false`);
    if (JSON.stringify(sc.capabilities?.drop) !== '["ALL"]') out.push(`${where}capabilities do not drop ALL`);
    if (sc.readOnlyRootFilesystem !== true) out.push(`${where}root filesystem is writable`);
  }
  return out;
}

/** The pod template of a Deployment or StatefulSet, with its metadata (for annotations). */
export const podTemplate = (w: K8sObject): Json => ({
  ...w.spec.template.spec,
  metadata: w.spec.template.metadata,
});
