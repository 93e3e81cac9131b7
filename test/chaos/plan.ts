import fc from 'fast-check';

/** The five operation classes, each backed by one tool of chaos-tools.yaml. */
export const CHAOS_CLASSES = ['read_only', 'idempotent_write', 'conditional_write', 'irreversible', 'remote_command'] as const;
export type ChaosClass = (typeof CHAOS_CLASSES)[number];

export const TOOL_OF_CLASS: Readonly<Record<ChaosClass, string>> = {
  read_only: 'chaos_read',
  idempotent_write: 'chaos_set',
  conditional_write: 'chaos_update',
  irreversible: 'chaos_pay',
  remote_command: 'chaos_run',
};

/**
 * What goes wrong during the first call of a trial, and when (`atMs` after the call was sent):
 * - `drop_before_answer`: the agent's connections are cut (no MCP cancel), as a network drop would;
 * - `drop_after_answer`: the answer reaches the agent's socket and the agent gives up without reading it;
 * - `kill_gateway`: kill -9 of the gateway, then a restart on the same data folder;
 * - `target_hold`: the target acts and withholds its answer for `atMs`, then answers;
 * - `target_reset`: the target acts, then resets the connection;
 * - `target_5xx`: the target acts, then answers 502 (a proxy's error after the origin acted);
 * - `ssh_drop`: the SSH connection is killed mid-command (the command keeps running on the host).
 * Target faults are HTTP faults; a remote command gets `ssh_drop` instead.
 */
export const FAULTS = ['drop_before_answer', 'drop_after_answer', 'kill_gateway', 'target_hold', 'target_reset', 'target_5xx', 'ssh_drop'] as const;
export type Fault = (typeof FAULTS)[number];

const HTTP_FAULTS: readonly Fault[] = ['drop_before_answer', 'drop_after_answer', 'kill_gateway', 'target_hold', 'target_reset', 'target_5xx'];
const SSH_FAULTS: readonly Fault[] = ['drop_before_answer', 'drop_after_answer', 'kill_gateway', 'ssh_drop'];

/** One trial, drawn from the campaign's seed: everything random about it is here, so it can be replayed. */
export interface TrialPlan {
  readonly index: number;
  readonly operationClass: ChaosClass;
  readonly fault: Fault;
  /** When the fault strikes, in ms after the first call was sent (for `target_hold`: how long the answer is held). */
  readonly atMs: number;
  /**
   * How long the target (or the remote command) takes to act and answer on the first attempt, so the fault lands
   * before, during or after the dispatch.
   */
  readonly targetDelayMs: number;
  /** `soon`: the agent retries at once; `after_grace`: it retries after the tool's redelivery grace ran out. */
  readonly retry: 'soon' | 'after_grace';
}

const planArbitrary = fc
  .record({
    operationClass: fc.constantFrom(...CHAOS_CLASSES),
    faultPick: fc.nat({ max: 10_000 }),
    // Without bias: fast-check favours the bounds, and every fault would strike at 0 ms.
    moment: fc.noBias(fc.integer({ min: 0, max: 1_000 })),
    targetDelayMs: fc.noBias(fc.integer({ min: 0, max: 1_200 })),
    retry: fc.constantFrom('soon' as const, 'after_grace' as const),
  })
  .map(({ operationClass, faultPick, moment, targetDelayMs, retry }) => {
    const faults = operationClass === 'remote_command' ? SSH_FAULTS : HTTP_FAULTS;
    const fault = faults[faultPick % faults.length]!;
    // A hold straddles the tools' 2 s response timeout; any other fault lands before, during or just after the
    // target's work, where it can cut something.
    const atMs = Math.floor((moment / 1_000) * (fault === 'target_hold' ? 3_000 : targetDelayMs + 600));
    return { operationClass, fault, atMs, targetDelayMs, retry };
  });

/** The first `trials` plans of the campaign `seed`; trial i is the same whatever the number of trials. */
export function planTrials(seed: number, trials: number): TrialPlan[] {
  if (trials === 0) return [];
  return fc.sample(planArbitrary, { seed, numRuns: trials }).map((plan, index) => ({ index, ...plan }));
}

/** The fault in words, with what is needed to replay it. */
export function describePlan(plan: TrialPlan, seed: number): string {
  const slow = `the ${plan.operationClass === 'remote_command' ? 'command' : 'target'} takes ${plan.targetDelayMs} ms`;
  const what: Record<Fault, string> = {
    drop_before_answer: `${slow}; the agent's connection is cut ${plan.atMs} ms after the call`,
    drop_after_answer: `${slow}; the answer reaches the agent, which gives up without reading it`,
    kill_gateway: `${slow}; kill -9 of the gateway ${plan.atMs} ms after the call, restart on the same data folder`,
    target_hold: `the target acts and holds its answer for ${plan.atMs} ms`,
    target_reset: 'the target acts, then resets the connection',
    target_5xx: 'the target acts, then answers 502',
    ssh_drop: `${slow}; the SSH connection is killed ${plan.atMs} ms after the call`,
  };
  return (
    `trial ${plan.index} (seed ${seed}): ${plan.operationClass} via ${TOOL_OF_CLASS[plan.operationClass]}: ` +
    `${what[plan.fault]}; the agent retries ${plan.retry === 'soon' ? 'at once' : 'after the redelivery grace'}`
  );
}
