import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AGGREGATED_V2,
  AGGREGATED_V2BETA1,
  aggregatedDiscovery,
  apiGroupDoc,
  apiGroupList,
  apiResourceList,
  apiVersions,
  versionInfo,
} from './discovery.js';
import { aggregatedDiscoveryVersion, parseAccept, sendJson } from './http-io.js';
import { openApiV2, openApiV3GroupVersion, openApiV3Root } from './openapi.js';
import type { Route } from './request-path.js';
import type { ServerContext } from './server-context.js';
import { errors } from './status.js';

// Clients ask with "@v1.0"; the server answers with ".v1.0" because Go's mime parser rejects "@".
const OPENAPI_V2_PROTOBUF_ACCEPT = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

/** Discovery, OpenAPI, version and health endpoints. */
export function routeNonResource(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  route: Exclude<Route, { kind: 'resource' } | { kind: 'unknown-resource' }>,
  opts: { aggregated: boolean; address: string },
): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') throw errors.methodNotAllowed();
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const accept = req.headers.accept;

  if (route.kind === 'group-version') {
    const list = apiResourceList(ctx.registry, route.group, route.version);
    if (!list) throw errors.notFoundPath();
    sendJson(res, 200, list);
    return;
  }
  if (route.kind === 'group') {
    const doc = apiGroupDoc(ctx.registry, route.group);
    if (!doc) throw errors.notFoundPath();
    sendJson(res, 200, doc);
    return;
  }

  switch (path) {
    case '/version':
      sendJson(res, 200, versionInfo(ctx.gitVersion));
      return;
    case '/api':
    case '/apis': {
      const core = path === '/api';
      const version = opts.aggregated ? aggregatedDiscoveryVersion(accept) : undefined;
      if (version) {
        const apiVersion = `apidiscovery.k8s.io/${version}`;
        const contentType = version === 'v2' ? AGGREGATED_V2 : AGGREGATED_V2BETA1;
        sendJson(res, 200, aggregatedDiscovery(ctx.registry, core, apiVersion), contentType);
      } else sendJson(res, 200, core ? apiVersions(opts.address) : apiGroupList(ctx.registry));
      return;
    }
    case '/healthz':
    case '/livez':
    case '/readyz':
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return;
    case '/openapi/v2': {
      // An empty protobuf message is a valid, empty OpenAPI document for clients asking for protobuf.
      if (
        parseAccept(accept).some(
          (e) => e.type === OPENAPI_V2_PROTOBUF_ACCEPT || e.type === OPENAPI_V2_PROTOBUF,
        )
      ) {
        res.writeHead(200, { 'Content-Type': OPENAPI_V2_PROTOBUF, 'Content-Length': 0 });
        res.end();
      } else sendJson(res, 200, openApiV2(ctx.gitVersion));
      return;
    }
    case '/openapi/v3':
      sendJson(res, 200, openApiV3Root(ctx.registry));
      return;
  }
  const gv = /^\/openapi\/v3\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(path);
  if (gv) {
    const doc = gv[1]
      ? openApiV3GroupVersion(ctx.registry, '', 'v1')
      : openApiV3GroupVersion(ctx.registry, gv[2]!, gv[3]!);
    if (doc) {
      sendJson(res, 200, doc);
      return;
    }
  }
  throw errors.notFoundPath();
}
