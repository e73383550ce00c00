import { createRequire } from 'node:module';
import type * as ClientNode from '@kubernetes/client-node';

const require = createRequire(import.meta.url);
let loaded: typeof ClientNode | undefined;

/**
 * @kubernetes/client-node, loaded on first use. It costs about 65 MiB of RSS and half a second
 * to load, so a service that never reaches a Kubernetes API (a gateway without registration or
 * Secrets) should not pay for it; modules import its types only and its values from here.
 * (`require` of an ES module: synchronous, so `loadKubeAccess` stays synchronous.)
 */
export function clientNode(): typeof ClientNode {
  loaded ??= require('@kubernetes/client-node') as typeof ClientNode;
  return loaded;
}

/** Whether anything in this process has loaded client-node through `clientNode()` yet. */
export function clientNodeLoaded(): boolean {
  return loaded !== undefined;
}
