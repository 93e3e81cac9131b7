// How attempts that lost their dispatcher are found and settled: the instances' liveness leases and locks, the
// sweeper, and the recovery of one execution through its channel.
export { AttemptSweeper } from './attempt-sweeper';
export { recoverExecution, type MarkerFinding, type TaskResumption } from './execution-recovery';
export { dispatcherInstanceId, InstanceLeases, newInstance } from './instance-leases';
