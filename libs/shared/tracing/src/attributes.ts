/**
 * Span attribute names: OpenTelemetry semantic conventions where one exists (stable HTTP and
 * database names), `pullplane.*` for ours. Values never include bodies, keys' values, tokens
 * or headers.
 */
export const Attr = {
  httpMethod: 'http.request.method',
  httpStatus: 'http.response.status_code',
  urlPath: 'url.path',
  urlScheme: 'url.scheme',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  rpcSystem: 'rpc.system',
  rpcService: 'rpc.service',
  rpcMethod: 'rpc.method',
  dbSystem: 'db.system',
  dbSystemName: 'db.system.name',
  dbOperation: 'db.operation.name',
  agentName: 'pullplane.agent.name',
  requestId: 'pullplane.request.id',
  gatewayId: 'pullplane.gateway.id',
} as const;

/** The service.name of each app's spans. */
export const SERVICE_NAMES = {
  'stream-gateway': 'pullplane-stream-gateway',
  'resource-proxy': 'pullplane-resource-proxy',
  'redis-proxy': 'pullplane-redis-proxy',
  'extension-proxy': 'pullplane-extension-proxy',
  agent: 'pullplane-agent',
  'all-in-one': 'pullplane-all-in-one',
} as const;
export type TracedApp = keyof typeof SERVICE_NAMES;
