export {
  type CallerRevocations,
  followCallerRevocations,
  type RevocationForgetting,
} from './caller-revocations.js';
export { type ConnectionPeer, connectionPeers } from './connection-peer.js';
export { type ForwardedHeader, forwardedHeaders, requestIdOf } from './forwarded-headers.js';
export {
  exchangeFailure,
  type FailureNames,
  type FrontFailure,
  tunnelFailure,
} from './front-failures.js';
export { bindHttpExchange, type HttpExchangeOptions } from './http-exchange.js';
export { createHttpFront, type HttpFront, type HttpFrontOptions } from './http-front.js';
export {
  type HttpResponseRelayOptions,
  RESPONSE_FRAMING_METRIC,
  type ResponseFramingViolation,
  relayHttpResponse,
} from './http-response.js';
export { createHttpServer, type HttpServer, type HttpServerOptions } from './http-server.js';
export type { Acceptance, ExchangeReport, FrontTarget, ProxyRoute } from './proxy-route.js';
export { type FrontMaterial, type ServedFront, type ServeFrontOptions, serveFront } from './served-front.js';
export {
  type Answer,
  answerText,
  type Failure,
  type FrontErrorSpec,
  reasonPhrase,
  statusAnswer,
} from './status-answer.js';
export type { OpenHead, StreamOpener } from './stream-opener.js';
