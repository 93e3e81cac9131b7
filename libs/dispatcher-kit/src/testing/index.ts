// @oncegate/dispatcher-kit/testing: the conformance suite a channel proves itself with, under any test runner, and
// the faults it injects (at a TCP target with FaultProxy, or at the driver with DriverFaults).
export {
  ConformanceFailure,
  defineDispatcherConformance,
  type ConformanceOptions,
  type ConformanceRunner,
  type ConformanceSubject,
  type ConformanceTarget,
} from './conformance';
export { DriverFaults } from './driver-faults';
export type { WorldCredential } from './dispatcher-world';
export { FaultProxy } from './fault-proxy';
export { nodeTestRunner } from './node-test-runner';
