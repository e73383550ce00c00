export { AGENT_COMMANDS, type AgentCommand, agentCommand } from './agent-commands.js';
export { type LocalName, PIPE, toClientName, toLocalName, UNDERSCORE } from './agent-key-names.js';
export { connectRedis, type RedisEndpoint, readyEvent } from './redis-socket.js';
export {
  type PubSubKind,
  type PubSubMessage,
  RedisSubscriber,
  type RedisSubscriberOptions,
} from './redis-subscriber.js';
export { type PubSubListener, SubscriptionHub, type SubscriptionSource } from './subscription-hub.js';
