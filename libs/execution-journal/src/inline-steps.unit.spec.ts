import { describe, expect, it } from 'vitest';
import { decide, initialState, type ExecutionCommand, type ExecutionState } from '@oncegate/domain';
import { acceptExecution, at, authorize, dispatch, EXECUTION_ID, requestApproval } from '@oncegate/domain/testing';
import { chainSteps, InlineSteps, tellCommitted, type InlineStep } from './inline-steps';

const clock = { now: () => new Date(at(100)) };

/** A step that decides `command` whenever the execution is in `status`, and keeps what it was told. */
function stepOn(actor: string, status: ExecutionState['status'], command: ExecutionCommand | (() => Promise<ExecutionCommand>)): InlineStep & { told: ExecutionState[] } {
  const told: ExecutionState[] = [];
  return {
    actor,
    told,
    decide: async (state) => (state.status !== status ? undefined : typeof command === 'function' ? command() : command),
    committed: (state) => told.push(state),
  };
}

function chain(steps: readonly InlineStep[]) {
  const accept = acceptExecution();
  return chainSteps(EXECUTION_ID, { state: initialState(), events: decide(accept, initialState()), context: { actor: 'agent:deploy-bot', correlation: accept.correlation } }, steps, clock);
}

describe('the inline chain of an accepted execution', () => {
  it('given authorization and a dispatcher as steps, when the execution is accepted, then both decide in turn and every event names the one before as its cause', async () => {
    const authorization = stepOn('service:authorization', 'accepted', authorize());
    const dispatcher = stepOn('service:dispatcher-http', 'authorized', dispatch());
    // Offered in any order: each takes only the state it reacts to.
    const chained = await chain([dispatcher, authorization]);

    expect(chained.events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched']);
    expect(chained.state.status).toBe('dispatched');
    const [accepted, authorized, dispatched] = chained.toAppend;
    expect(authorized!.metadata).toMatchObject({ actor: 'service:authorization', causationId: accepted!.id, executionId: EXECUTION_ID });
    expect(dispatched!.metadata).toMatchObject({ actor: 'service:dispatcher-http', causationId: authorized!.id });
    expect(dispatched!.metadata!['correlation']).toEqual(acceptExecution().correlation);
    expect(chained.contributed).toEqual([authorization, dispatcher]);

    tellCommitted(chained);
    expect(authorization.told.map((state) => state.status)).toEqual(['dispatched']);
    expect(dispatcher.told.map((state) => state.status)).toEqual(['dispatched']);
  });

  it('given a verdict that must wait for a person, when the chain runs, then it stops at ApprovalRequested and the dispatcher is neither asked to act nor told', async () => {
    const authorization = stepOn('service:authorization', 'accepted', requestApproval());
    const dispatcher = stepOn('service:dispatcher-http', 'authorized', dispatch());
    const chained = await chain([authorization, dispatcher]);
    expect(chained.events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);
    tellCommitted(chained);
    expect(authorization.told).toHaveLength(1);
    expect(dispatcher.told).toHaveLength(0);
  });

  it('given a step that fails to decide, when the chain runs, then it stops before that step and keeps what was decided before', async () => {
    const authorization = stepOn('service:authorization', 'accepted', authorize());
    const failing = stepOn('service:dispatcher-http', 'authorized', () => Promise.reject(new Error('the vault cannot be read')));
    const chained = await chain([authorization, failing]);
    expect(chained.events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized']);
    expect(chained.contributed).toEqual([authorization]);
  });

  it('given a step whose command the decider refuses, when the chain runs, then it stops there without the refused events', async () => {
    // Dispatching an execution that is only accepted is refused by the decider.
    const wrong = stepOn('service:dispatcher-http', 'accepted', dispatch());
    const chained = await chain([wrong]);
    expect(chained.events.map((event) => event.type)).toEqual(['ExecutionAccepted']);
    expect(chained.contributed).toEqual([]);
  });

  it('given no steps (no service runs in this process), when the chain runs, then only the acceptance is committed', async () => {
    const chained = await chain([]);
    expect(chained.toAppend.map((event) => event.type)).toEqual(['ExecutionAccepted']);
    expect(chained.state.status).toBe('accepted');
  });

  it('given steps added and one removed, when they are listed, then the removed one is gone and the others keep their order', () => {
    const steps = new InlineSteps();
    const a = stepOn('a', 'accepted', authorize());
    const b = stepOn('b', 'authorized', dispatch());
    const c = stepOn('c', 'authorized', dispatch());
    steps.add(a);
    const removeB = steps.add(b);
    steps.add(c);
    removeB();
    expect(steps.list()).toEqual([a, c]);
  });
});
