export { describeDispatcherConformance, type ConformanceOptions, type ConformanceSubject, type ConformanceTarget } from './conformance';
export { DispatcherWorld, type DispatcherWorldOptions, type WorldCredential, type WorldDispatcher } from './dispatcher-world';
export { FaultProxy } from './fault-proxy';
