export { Agent, type AgentOptions } from './agent.js';
export { createKubeForwarder, type KubeForwarderOptions } from './kube-forwarder.js';
export { type ConnectorEvents, TunnelConnector, type TunnelConnectorOptions } from './tunnel-connector.js';
