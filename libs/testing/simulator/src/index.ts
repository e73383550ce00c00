export {
  type AgentCredentials,
  type Fleet,
  type FleetOptions,
  type SimulatedAgent,
  startFleet,
} from './fleet.js';
