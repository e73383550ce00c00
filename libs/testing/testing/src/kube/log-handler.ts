import type { ServerResponse } from 'node:http';
import { parseBoolParam, parseIntParam } from './http-io.js';
import type { LogLine } from './pod-logs.js';
import type { ResourceRoute } from './request-path.js';
import type { ServerContext } from './server-context.js';
import { errors } from './status.js';
import { isPlainObject, type KubeObject } from './types.js';

function containerNames(pod: KubeObject): string[] {
  const spec = isPlainObject(pod.spec) ? pod.spec : {};
  const names = (list: unknown) =>
    (Array.isArray(list) ? list : []).filter(isPlainObject).map((c) => String(c.name ?? ''));
  return [...names(spec.containers), ...names(spec.initContainers), ...names(spec.ephemeralContainers)];
}

/** Which container a log request refers to, with the kubelet's error wording. */
export function resolveContainer(pod: KubeObject, requested: string | null): string {
  const name = pod.metadata.name ?? '';
  const all = containerNames(pod);
  const main = isPlainObject(pod.spec) && Array.isArray(pod.spec.containers) ? pod.spec.containers : [];
  if (requested) {
    if (all.length > 0 && !all.includes(requested)) {
      throw errors.badRequest(`container ${requested} is not valid for pod ${name}`);
    }
    return requested;
  }
  if (main.length > 1) {
    const names = main.filter(isPlainObject).map((c) => String(c.name));
    throw errors.badRequest(
      `a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`,
    );
  }
  return all[0] ?? '';
}

/**
 * `GET …/pods/<name>/log`: plain text; with `follow=true` the response stays open and
 * lines appended through the store arrive at once; it ends when the pod is deleted.
 */
export function handleLogs(
  ctx: ServerContext,
  res: ServerResponse,
  route: ResourceRoute,
  params: URLSearchParams,
): void {
  const namespace = route.namespace ?? '';
  const podName = route.name ?? '';
  const pod = ctx.api.get(route.type, namespace, podName);
  const container = resolveContainer(pod, params.get('container'));
  const follow = parseBoolParam(params.get('follow'));
  const timestamps = parseBoolParam(params.get('timestamps'));
  const tailLines = parseIntParam('tailLines', params.get('tailLines'));
  const sinceSeconds = parseIntParam('sinceSeconds', params.get('sinceSeconds'));
  let remainingBytes = parseIntParam('limitBytes', params.get('limitBytes')) ?? Number.POSITIVE_INFINITY;

  let lines = [...ctx.logs.read(namespace, podName, container)];
  if (sinceSeconds !== undefined) {
    const cutoff = Date.now() - sinceSeconds * 1000;
    lines = lines.filter((l) => Date.parse(l.time) >= cutoff);
  }
  if (tailLines !== undefined) lines = tailLines === 0 ? [] : lines.slice(-tailLines);

  const format = (line: LogLine) => {
    let text = `${timestamps ? `${line.time} ` : ''}${line.text}\n`;
    if (Buffer.byteLength(text) > remainingBytes)
      text = Buffer.from(text).subarray(0, remainingBytes).toString('utf8');
    remainingBytes -= Buffer.byteLength(text);
    return text;
  };

  res.writeHead(200, { 'Content-Type': 'text/plain', 'Cache-Control': 'no-cache, private' });
  for (const line of lines) {
    if (remainingBytes <= 0) break;
    res.write(format(line));
  }
  if (!follow || remainingBytes <= 0) {
    res.end();
    return;
  }
  res.flushHeaders();
  const uid = pod.metadata.uid;
  const stopFollowing = ctx.logs.follow(namespace, podName, container, (line) => {
    res.write(format(line));
    if (remainingBytes <= 0) res.end();
  });
  const stopWatching = ctx.store.subscribe((ev) => {
    if (ev.type === 'DELETED' && ev.object.metadata.uid === uid) res.end();
  });
  ctx.logFollowers.add(res);
  res.on('close', () => {
    stopFollowing();
    stopWatching();
    ctx.logFollowers.delete(res);
  });
}
