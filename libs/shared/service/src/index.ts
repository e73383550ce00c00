export { logLevelOption, type OpsOptionNames, opsOptions } from './ops-options.js';
export {
  type BootstrapFlags,
  runService,
  type ServiceProcess,
  type ServiceSpec,
} from './run-service.js';
export { type OpsFlags, type Service, type ServiceDeps, type ServiceOps, serviceOps } from './service.js';
