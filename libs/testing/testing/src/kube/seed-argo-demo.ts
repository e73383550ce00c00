import type { FakeKubeStore } from './fake-store.js';
import { randomSuffix } from './object-defaults.js';
import type { KubeObject, ObjectRef } from './types.js';
import { kubeTimestamp } from './types.js';

export const TRACKING_ANNOTATION = 'argocd.argoproj.io/tracking-id';
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';

export interface SeedArgoDemoOptions {
  /** Namespace of the workloads (default "demo"). */
  namespace?: string | undefined;
  /** Argo CD application names; each gets a Deployment + Service (default guestbook, podinfo). */
  apps?: string[] | undefined;
  /** Pods per Deployment (default 2). */
  replicas?: number | undefined;
  /** Where the Application objects go; null to create none (default "argocd"). */
  applicationNamespace?: string | null | undefined;
  /** Node the pods run on (default "fake-node-1", created if missing). */
  nodeName?: string | undefined;
}

export interface SeededApp {
  name: string;
  deployment: ObjectRef;
  replicaSet: ObjectRef;
  pods: ObjectRef[];
  service: ObjectRef;
  application?: ObjectRef | undefined;
}

export interface SeededArgoDemo {
  namespace: string;
  apps: SeededApp[];
  /** Objects Argo CD manages directly (tracking annotation) or through ownerReferences. */
  managed: ObjectRef[];
  /** Objects with no tracking annotation and no managed owner. */
  unmanaged: ObjectRef[];
}

const ref = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  namespace: o.metadata.namespace,
  name: o.metadata.name ?? '',
});

const ownerRef = (o: KubeObject) => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  name: o.metadata.name ?? '',
  uid: o.metadata.uid ?? '',
  controller: true,
  blockOwnerDeletion: true,
});

function event(
  store: FakeKubeStore,
  about: KubeObject,
  reason: string,
  message: string,
  component: string,
): void {
  const now = kubeTimestamp();
  store.put({
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${about.metadata.name}.${randomSuffix(16)}`, namespace: about.metadata.namespace },
    involvedObject: {
      apiVersion: about.apiVersion,
      kind: about.kind,
      name: about.metadata.name,
      namespace: about.metadata.namespace,
      uid: about.metadata.uid,
      resourceVersion: about.metadata.resourceVersion,
    },
    reason,
    message,
    type: 'Normal',
    source: { component },
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    reportingComponent: component,
    reportingInstance: '',
  });
}

function podSpec(app: string, nodeName?: string) {
  const spec: Record<string, unknown> = {
    containers: [
      {
        name: app,
        image: `ghcr.io/example/${app}:1.0.0`,
        ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
        env: [{ name: 'APP_NAME', value: app }],
        resources: {},
        imagePullPolicy: 'IfNotPresent',
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        // An open stdin, so `kubectl attach -i` reaches the main process (which echoes it).
        stdin: true,
      },
    ],
    restartPolicy: 'Always',
    dnsPolicy: 'ClusterFirst',
    serviceAccountName: 'default',
    schedulerName: 'default-scheduler',
    terminationGracePeriodSeconds: 30,
  };
  if (nodeName) spec.nodeName = nodeName;
  return spec;
}

/**
 * Seeds what an Argo CD-managed workload cluster looks like: per app a Deployment and
 * Service carrying the tracking annotation and instance label, the ReplicaSet and Pods
 * reachable only through ownerReferences, Events, container logs and (optionally) the
 * Application objects; plus a few unmanaged objects for testing the managed-resource filter.
 * The pods run on a node, so exec, cp and attach work on them, and port-forward to their port
 * 8080 reaches the built-in HTTP server.
 */
export function seedArgoDemo(store: FakeKubeStore, opts: SeedArgoDemoOptions = {}): SeededArgoDemo {
  const namespace = opts.namespace ?? 'demo';
  const apps = opts.apps ?? ['guestbook', 'podinfo'];
  const replicas = opts.replicas ?? 2;
  const nodeName = opts.nodeName ?? 'fake-node-1';
  const appNamespace = opts.applicationNamespace === undefined ? 'argocd' : opts.applicationNamespace;
  const result: SeededArgoDemo = { namespace, apps: [], managed: [], unmanaged: [] };

  if (!store.get({ apiVersion: 'v1', kind: 'Node', name: nodeName })) {
    store.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: nodeName,
        labels: { 'kubernetes.io/hostname': nodeName, 'node-role.kubernetes.io/control-plane': '' },
      },
      spec: {},
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
          },
        ],
        nodeInfo: {
          kubeletVersion: 'v1.30.4',
          osImage: 'Fake Linux',
          architecture: 'amd64',
          operatingSystem: 'linux',
        },
        addresses: [{ type: 'InternalIP', address: '172.18.0.2' }],
      },
    });
  }
  store.put({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace } });

  let podIp = 10;
  for (const app of apps) {
    const labels = { app, [INSTANCE_LABEL]: app };
    const template = { metadata: { labels: { app } }, spec: podSpec(app) };
    const deployment = store.put({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: app,
        namespace,
        labels,
        annotations: {
          [TRACKING_ANNOTATION]: `${app}:apps/Deployment:${namespace}/${app}`,
          'deployment.kubernetes.io/revision': '1',
        },
      },
      spec: { replicas, selector: { matchLabels: { app } }, template, strategy: { type: 'RollingUpdate' } },
      status: {
        observedGeneration: 1,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          },
          {
            type: 'Progressing',
            status: 'True',
            reason: 'NewReplicaSetAvailable',
            message: `ReplicaSet has successfully progressed.`,
          },
        ],
      },
    });
    const hash = randomSuffix(10);
    const rs = store.put({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${app}-${hash}`,
        namespace,
        labels: { app, 'pod-template-hash': hash },
        annotations: {
          'deployment.kubernetes.io/revision': '1',
          'deployment.kubernetes.io/desired-replicas': String(replicas),
        },
        ownerReferences: [ownerRef(deployment)],
      },
      spec: { replicas, selector: { matchLabels: { app, 'pod-template-hash': hash } }, template },
      status: {
        replicas,
        fullyLabeledReplicas: replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
        observedGeneration: 1,
      },
    });
    event(
      store,
      deployment,
      'ScalingReplicaSet',
      `Scaled up replica set ${rs.metadata.name} to ${replicas}`,
      'deployment-controller',
    );
    const pods: ObjectRef[] = [];
    for (let i = 0; i < replicas; i++) {
      const now = kubeTimestamp();
      const pod = store.put({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `${rs.metadata.name}-${randomSuffix()}`,
          namespace,
          labels: { app, 'pod-template-hash': hash },
          ownerReferences: [ownerRef(rs)],
        },
        spec: podSpec(app, nodeName),
        status: {
          phase: 'Running',
          hostIP: '172.18.0.2',
          podIP: `10.244.0.${podIp}`,
          podIPs: [{ ip: `10.244.0.${podIp++}` }],
          startTime: now,
          qosClass: 'BestEffort',
          conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
            type,
            status: 'True',
            lastTransitionTime: now,
          })),
          containerStatuses: [
            {
              name: app,
              image: `ghcr.io/example/${app}:1.0.0`,
              imageID: `ghcr.io/example/${app}@sha256:${'0'.repeat(64)}`,
              containerID: `containerd://${randomSuffix(20)}`,
              ready: true,
              started: true,
              restartCount: 0,
              state: { running: { startedAt: now } },
            },
          ],
        },
      });
      const podName = pod.metadata.name ?? '';
      event(
        store,
        pod,
        'Scheduled',
        `Successfully assigned ${namespace}/${podName} to ${nodeName}`,
        'default-scheduler',
      );
      event(
        store,
        pod,
        'Pulled',
        `Container image "ghcr.io/example/${app}:1.0.0" already present on machine`,
        'kubelet',
      );
      event(store, pod, 'Started', `Started container ${app}`, 'kubelet');
      store.appendPodLog(namespace, podName, `${app} starting on :8080`);
      store.appendPodLog(namespace, podName, `${app} ready`);
      pods.push(ref(pod));
    }
    const service = store.put({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: app,
        namespace,
        labels,
        annotations: { [TRACKING_ANNOTATION]: `${app}:/Service:${namespace}/${app}` },
      },
      spec: {
        type: 'ClusterIP',
        clusterIP: `10.96.100.${podIp}`,
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
        selector: { app },
      },
      status: { loadBalancer: {} },
    });
    const seeded: SeededApp = {
      name: app,
      deployment: ref(deployment),
      replicaSet: ref(rs),
      pods,
      service: ref(service),
    };
    if (appNamespace) {
      const application = store.put({
        apiVersion: 'argoproj.io/v1alpha1',
        kind: 'Application',
        metadata: {
          name: app,
          namespace: appNamespace,
          finalizers: ['resources-finalizer.argocd.argoproj.io'],
        },
        spec: {
          project: 'default',
          source: {
            repoURL: 'https://github.com/argoproj/argocd-example-apps',
            path: app,
            targetRevision: 'HEAD',
          },
          destination: { server: 'https://kubernetes.default.svc', namespace },
          syncPolicy: { automated: { prune: true, selfHeal: true } },
        },
        status: {
          sync: { status: 'Synced', revision: '53e28ff20cc530b9ada2173fbbd64d48338583ba' },
          health: { status: 'Healthy' },
          resources: [
            {
              group: 'apps',
              version: 'v1',
              kind: 'Deployment',
              namespace,
              name: app,
              status: 'Synced',
              health: { status: 'Healthy' },
            },
            {
              version: 'v1',
              kind: 'Service',
              namespace,
              name: app,
              status: 'Synced',
              health: { status: 'Healthy' },
            },
          ],
        },
      });
      seeded.application = ref(application);
    }
    result.apps.push(seeded);
    result.managed.push(seeded.deployment, seeded.service, seeded.replicaSet, ...pods);
  }

  const configMap = store.put({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'unmanaged-config', namespace },
    data: { note: 'created by hand, not tracked by Argo CD' },
  });
  const secret = store.put({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'unmanaged-secret', namespace },
    type: 'Opaque',
    data: { password: Buffer.from('hunter2').toString('base64') },
  });
  const debugPod = store.put({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'debug-shell', namespace, labels: { run: 'debug-shell' } },
    spec: {
      ...podSpec('debug-shell', nodeName),
      // As `kubectl run -it` makes it: a terminal on stdin, for `kubectl attach -it`.
      containers: [{ name: 'shell', image: 'busybox:1.36', command: ['sh'], stdin: true, tty: true }],
    },
    status: {
      phase: 'Running',
      podIP: '10.244.0.250',
      containerStatuses: [
        { name: 'shell', ready: true, restartCount: 0, state: { running: { startedAt: kubeTimestamp() } } },
      ],
    },
  });
  store.appendPodLog(namespace, 'debug-shell', 'not an Argo CD workload');
  result.unmanaged.push(ref(configMap), ref(secret), ref(debugPod));
  return result;
}
