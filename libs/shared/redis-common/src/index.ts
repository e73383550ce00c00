export { AGENT_COMMANDS, type AgentCommand, agentCommand } from './agent-commands.js';
export { type LocalName, PIPE, toClientName, toLocalName, UNDERSCORE } from './agent-key-names.js';
export { type ConnectionState, setupCommands } from './connection-setup.js';
export {
  RawConnection,
  type RawConnectionOptions,
  type RawReply,
  type RawReplyCallback,
} from './raw-connection.js';
export { connectRedis, type RedisEndpoint, readyEvent } from './redis-socket.js';
export {
  type PubSubKind,
  type PubSubMessage,
  RedisSubscriber,
  type RedisSubscriberOptions,
} from './redis-subscriber.js';
export { ReplyWaiters, type SentAt } from './reply-waiters.js';
export { type AcceptedReads, type ChunkHandler, type ReadPath, readAccepted } from './shared-read-buffer.js';
export { type PubSubListener, SubscriptionHub, type SubscriptionSource } from './subscription-hub.js';
