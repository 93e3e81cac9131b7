export {
  ConformanceFailure,
  defineDispatcherConformance,
  type ConformanceOptions,
  type ConformanceRunner,
  type ConformanceSubject,
  type ConformanceTarget,
} from './conformance';
export { DriverFaults } from './driver-faults';
export { DispatcherWorld, type DispatcherWorldOptions, type WorldCredential, type WorldDispatcher } from './dispatcher-world';
export { FaultProxy } from './fault-proxy';
export { nodeTestRunner } from './node-test-runner';
