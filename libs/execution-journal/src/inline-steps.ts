import { decide, evolve, isDomainError, type ExecutionCommand, type ExecutionEvent, type ExecutionState, type ProtocolCorrelation } from '@oncegate/domain';
import type { EventToAppend } from '@oncegate/event-store';
import type { Clock } from './clock';
import { eventsToAppend, type AppendContext } from './execution-journal';

/**
 * One service's reaction to an execution, taken inline when the service runs in the process that starts the
 * execution (docs/gateway.md, the pipeline): authorization on `accepted`, a channel's dispatcher on `authorized`.
 * The same service also handles the event from its durable subscription, for executions whose chain stopped before
 * it (a step that must wait, a service in another process, a process that stopped): `decide` must be what that
 * handler would decide on the same state.
 */
export interface InlineStep {
  /** Who appends this step's events (`service:authorization`). */
  readonly actor: string;
  /**
   * The command this step decides on the execution in this state, or `undefined` when the state is not one it
   * reacts to now (another step's, or one that must wait). A rejection stops the chain before this step: its
   * durable subscription decides again, and reports the failure.
   */
  decide(state: ExecutionState, correlation: ProtocolCorrelation): ExecutionCommand | undefined | Promise<ExecutionCommand | undefined>;
  /**
   * Told the state after the commit that held this step's events, before the starter is answered: the work that
   * must follow a durable decision (sending the attempt, tracking an approval deadline). Must not throw.
   */
  committed?(state: ExecutionState): void;
}

/** The steps this process runs inline, in the order they were added. */
export class InlineSteps {
  private readonly steps: InlineStep[] = [];

  /** Adds a step; the returned function removes it (a service that stops). */
  add(step: InlineStep): () => void {
    this.steps.push(step);
    return () => {
      const index = this.steps.indexOf(step);
      if (index >= 0) this.steps.splice(index, 1);
    };
  }

  list(): readonly InlineStep[] {
    return this.steps;
  }
}

/** What a chain decided: the events to commit (in order) and the state they lead to. */
export interface ChainedEvents {
  readonly toAppend: EventToAppend[];
  readonly events: ExecutionEvent[];
  readonly state: ExecutionState;
  /** The steps whose events are among them, to be told once they are durable. */
  readonly contributed: readonly InlineStep[];
}

/** The most steps one chain takes: each moves the execution forward, so a loop means a step that misbehaves. */
const MAX_CHAIN_LENGTH = 8;

/**
 * Decides the steps that can follow `first` now, each on the state the previous one left: every step is offered
 * the state in turn, and the chain stops when none takes it. Each step's events name the last event of the step
 * before as their cause, exactly as if its subscription had handled that event.
 */
export async function chainSteps(
  executionId: NonNullable<ExecutionState['executionId']>,
  first: { readonly state: ExecutionState; readonly events: readonly ExecutionEvent[]; readonly context: AppendContext },
  steps: readonly InlineStep[],
  clock: Clock,
): Promise<ChainedEvents> {
  let state = first.state;
  for (const event of first.events) state = evolve(state, event);
  const toAppend = eventsToAppend(executionId, first.events, first.context, clock);
  const events = [...first.events];
  const contributed: InlineStep[] = [];
  const correlation = first.context.correlation ?? {};
  for (let length = 0; length < MAX_CHAIN_LENGTH; length += 1) {
    const next = await nextStep(state, correlation, steps);
    if (next === undefined) break;
    const decided = next.events;
    const cause = toAppend.at(-1)!.id!;
    toAppend.push(...eventsToAppend(executionId, decided, { actor: next.step.actor, correlation, causationId: cause }, clock));
    for (const event of decided) state = evolve(state, event);
    events.push(...decided);
    if (!contributed.includes(next.step)) contributed.push(next.step);
  }
  return { toAppend, events, state, contributed };
}

async function nextStep(
  state: ExecutionState,
  correlation: ProtocolCorrelation,
  steps: readonly InlineStep[],
): Promise<{ step: InlineStep; events: ExecutionEvent[] } | undefined> {
  for (const step of steps) {
    let command: ExecutionCommand | undefined;
    try {
      // A step the state is not for says so without a promise: each step is asked at every link of the chain.
      const decided = step.decide(state, correlation);
      command = decided instanceof Promise ? await decided : decided;
    } catch {
      // Left to the step's durable subscription, which decides again and reports what fails.
      return undefined;
    }
    if (command === undefined) continue;
    try {
      const events = decide(command, state);
      return events.length === 0 ? undefined : { step, events };
    } catch (error) {
      if (isDomainError(error)) return undefined;
      throw error;
    }
  }
  return undefined;
}

/** Tells each contributing step the committed state. */
export function tellCommitted(chained: ChainedEvents): void {
  for (const step of chained.contributed) step.committed?.(chained.state);
}
