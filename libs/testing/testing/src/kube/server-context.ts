import type { ServerResponse } from 'node:http';
import type { KubeApi } from './kube-api.js';
import type { ObjectStore } from './object-store.js';
import type { PodLogs } from './pod-logs.js';
import type { RbacRules } from './rbac.js';
import type { ResourceRegistry } from './resource-registry.js';

/** What request handlers share: the API layer plus bookkeeping of open streams. */
export interface ServerContext {
  api: KubeApi;
  registry: ResourceRegistry;
  store: ObjectStore;
  logs: PodLogs;
  gitVersion: string;
  /** Strict mode: refuse what a real server refuses (see FakeKubeApiServerOptions.strict). */
  strict: boolean;
  rbac: RbacRules;
  /** Open watch responses (ended on close()). */
  watches: Set<ServerResponse>;
  /** Open `logs -f` responses. */
  logFollowers: Set<ServerResponse>;
  bookmarkIntervalMs: number;
  /** Server-chosen watch timeout when the client gives none (the real one picks 30–60 min). */
  defaultWatchTimeoutSeconds: number;
}
