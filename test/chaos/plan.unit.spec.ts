import { describe, expect, it } from 'vitest';
import { CHAOS_CLASSES, FAULTS, planTrials } from './plan';

describe('fault campaign plans', () => {
  it('given a seed, then trial i is the same whatever the number of trials, so one trial can be replayed alone', () => {
    expect(planTrials(42, 200).slice(0, 50)).toEqual(planTrials(42, 50));
    expect(planTrials(42, 50)).not.toEqual(planTrials(43, 50));
  });

  it('given 500 trials, then every class and every fault is drawn, and a remote command only gets faults it can have', () => {
    const plans = planTrials(1, 500);
    expect(new Set(plans.map((plan) => plan.operationClass))).toEqual(new Set(CHAOS_CLASSES));
    expect(new Set(plans.map((plan) => plan.fault))).toEqual(new Set(FAULTS));
    const remoteFaults = new Set(plans.filter((plan) => plan.operationClass === 'remote_command').map((plan) => plan.fault));
    expect([...remoteFaults].some((fault) => fault.startsWith('target_'))).toBe(false);
    expect(plans.filter((plan) => plan.operationClass !== 'remote_command').some((plan) => plan.fault === 'ssh_drop')).toBe(false);
    // Faults strike across their range, not only at its bounds.
    expect(new Set(plans.map((plan) => plan.atMs)).size).toBeGreaterThan(300);
  });
});
