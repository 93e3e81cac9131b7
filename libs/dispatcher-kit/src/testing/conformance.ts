import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionId, OperationClass } from '@oncegate/domain';
import type { KitChannel } from '../define-channel';
import { DispatcherWorld, type WorldCredential } from './dispatcher-world';

/** The channel's real target, seen from the test: how often an execution took effect there, and its faults. */
export interface ConformanceTarget {
  /** How many times the effect of this execution took place at the target (0 or 1 when the channel keeps its promise). */
  effects(executionId: ExecutionId): Promise<number>;
  /** The next attempt takes effect at the target and its answer never reaches the dispatcher (the connection breaks). */
  loseNextAnswer(): void | Promise<void>;
  /**
   * The next attempt takes effect at the target and its answer is held back on a connection left open: only the
   * dispatcher's response timeout (the contract's `limits.response_timeout`) ends the wait.
   */
  withholdNextAnswer(): void | Promise<void>;
  /** While on, nothing reaches the target (a connection is refused). */
  unreachable(on: boolean): void | Promise<void>;
  /** Resolves once the fault armed last (`loseNextAnswer`, `withholdNextAnswer`) has struck. */
  faultStruck(): Promise<void>;
}

/** A channel under the suite: its kit, a contract with one tool per class it declares, its vault credential and target. */
export interface ConformanceSubject {
  readonly kit: KitChannel;
  /**
   * A contract file with a tool `conformance_<class>` for each class of the suite's options, each naming the
   * credential and effecting the target once per execution.
   */
  readonly contract: string;
  /** The vault credential the tools name; its value holds the canary that must never be seen again. */
  readonly credential: WorldCredential;
  readonly target: ConformanceTarget;
  /**
   * A tool `conformance_echo` (class read_only) whose target answers with the credential as it received it, when the
   * channel's target can do that: its answer must reach the agent without the credential or any prefix of it.
   */
  readonly echo?: { readonly args: Record<string, unknown> };
  /** Arguments for the `n`th call of a class's tool: each call a distinct intent. */
  args(operationClass: OperationClass, n: number): Record<string, unknown>;
  close(): Promise<void>;
}

export interface ConformanceOptions {
  /** The classes the channel declares, each with its tool in the subject's contract. */
  readonly classes: readonly OperationClass[];
  /** Why the suite cannot run here (a server missing): every case is skipped with it. */
  readonly skip?: () => string | undefined;
}

/** Shorter pieces of a secret are too likely to occur by chance to say anything. */
const MIN_PREFIX = 6;

/** What recovery by class makes of an answer lost after the effect, once the agent retried (docs/design.md section 6). */
const AFTER_LOST_ANSWER: Record<OperationClass, { status: string; dispatches: number; evidence?: string }> = {
  read_only: { status: 'completed', dispatches: 2 },
  idempotent_write: { status: 'completed', dispatches: 2 },
  conditional_write: { status: 'needs_review', dispatches: 1, evidence: 'StatusQueried' },
  irreversible: { status: 'needs_review', dispatches: 1 },
  remote_command: { status: 'completed', dispatches: 1, evidence: 'MarkerProbed' },
};

/**
 * The dispatcher kit's conformance suite (docs/dispatchers.md): for each class the channel declares, against its
 * real target, it checks that `Dispatched` is durable before anything is sent, that the execution id is the
 * idempotency key, that definite and unknown outcomes are told apart (target down: nothing sent; answer lost or
 * late past the response timeout: unknown), that recovery by class after a lost answer, a timeout, a retry and a
 * killed dispatcher leaves exactly one effect,
 * and that the credential's canary — nor any prefix of it — appears in the journal, the sealed results or the logs.
 */
export function describeDispatcherConformance(name: string, open: () => Promise<ConformanceSubject>, options: ConformanceOptions): void {
  const skipped = options.skip?.();
  describe.skipIf(skipped !== undefined)(`dispatcher conformance: ${name}${skipped === undefined ? '' : ` (skipped: ${skipped})`}`, () => {
    let subject: ConformanceSubject;
    let world: DispatcherWorld;
    const calls = new Map<OperationClass, number>();
    const call = (operationClass: OperationClass) => {
      const n = (calls.get(operationClass) ?? 0) + 1;
      calls.set(operationClass, n);
      return world.call(`conformance_${operationClass}`, subject.args(operationClass, n));
    };
    const types = async (executionId: ExecutionId) => (await world.events(executionId)).map((event) => event.type);
    const count = async (executionId: ExecutionId, type: string) => (await types(executionId)).filter((each) => each === type).length;

    beforeAll(async () => {
      subject = await open();
      world = await DispatcherWorld.open({ kit: subject.kit, contract: subject.contract, credential: subject.credential });
    }, 120_000);

    afterAll(async () => {
      await world?.close();
      await subject?.close();
    });

    describe.each(options.classes)('class %s', (operationClass) => {
      it('given a call, then Dispatched is durable before the attempt, the outcome is observed, and the target took effect once under the execution id', async () => {
        const { dispatcher } = await world.dispatcher();
        const { executionId } = await call(operationClass);
        await world.dispatch(executionId, dispatcher);
        expect(await types(executionId)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved']);
        expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 1, outcome: 'succeeded', source: 'response' });
        expect(await subject.target.effects(executionId)).toBe(operationClass === 'read_only' ? 0 : 1);
      });

      it('given the dispatcher dies before its Dispatched is durable, then nothing is sent', async () => {
        const { dispatcher, kill } = await world.dispatcher();
        const { executionId, authorized } = await call(operationClass);
        // Killed before anything: its Dispatched never lands, so its attempt must never start.
        kill();
        const handled = dispatcher.onAuthorized(authorized);
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(await types(executionId)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized']);
        expect(await subject.target.effects(executionId)).toBe(0);
        void handled;
      });

      it('given the target unreachable, then the failure is definite and says nothing was sent', async () => {
        const { dispatcher } = await world.dispatcher();
        const { executionId } = await call(operationClass);
        await subject.target.unreachable(true);
        try {
          await world.dispatch(executionId, dispatcher);
        } finally {
          await subject.target.unreachable(false);
        }
        expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 1, outcome: 'failed', source: 'not_sent' });
        expect(await subject.target.effects(executionId)).toBe(0);
      });

      /** The first attempt took effect and its answer never came: the agent retries, and recovery by class follows. */
      async function unknownThenRetried(fault: () => void | Promise<void>): Promise<void> {
        const { dispatcher } = await world.dispatcher();
        const { executionId } = await call(operationClass);
        await fault();
        await world.dispatch(executionId, dispatcher);
        expect((await world.last(executionId, 'OutcomeUnknown'))?.data).toMatchObject({ attempt: 1 });

        await world.retry(executionId);
        const state = await world.recover(executionId, dispatcher);
        const expected = AFTER_LOST_ANSWER[operationClass];
        expect(state.status, (await types(executionId)).join(' → ')).toBe(expected.status);
        expect(await count(executionId, 'Dispatched')).toBe(expected.dispatches);
        if (expected.evidence !== undefined) expect(await count(executionId, expected.evidence)).toBe(1);
        expect(await subject.target.effects(executionId)).toBe(operationClass === 'read_only' ? 0 : 1);
      }

      it('given the answer is lost after the effect, when the agent retries, then recovery by class leaves exactly one effect', () =>
        unknownThenRetried(() => subject.target.loseNextAnswer()));

      it('given the answer never comes on a connection left open, then the response timeout makes the outcome unknown, and recovery by class leaves one effect', () =>
        unknownThenRetried(() => subject.target.withholdNextAnswer()), 60_000);

      it('given the dispatcher is killed with its attempt in flight, when the sweeper finds it gone and the agent retries, then one effect', async () => {
        const first = await world.dispatcher();
        const { executionId, authorized } = await call(operationClass);
        await subject.target.loseNextAnswer();
        // The attempt leaves once Dispatched is durable; the process dies before it can record anything.
        first.killAfterDispatched();
        await first.dispatcher.onAuthorized(authorized);
        expect(await count(executionId, 'Dispatched')).toBe(1);
        // The first attempt reached the target and lost its answer before anything else is sent.
        await subject.target.faultStruck();
        if (operationClass !== 'read_only') await until(async () => (await subject.target.effects(executionId)) === 1);

        await world.sweep();
        expect((await world.last(executionId, 'OutcomeUnknown'))?.data).toMatchObject({ attempt: 1, reason: 'dispatcher_lost' });
        const second = await world.dispatcher();
        await world.retry(executionId);
        const state = await world.recover(executionId, second.dispatcher);
        const expected = AFTER_LOST_ANSWER[operationClass];
        expect(state.status, (await types(executionId)).join(' → ')).toBe(expected.status);
        expect(await subject.target.effects(executionId)).toBe(operationClass === 'read_only' ? 0 : 1);
      });
    });

    it('given a target that echoes the credential, then the answer holds neither it nor any prefix of it', async (context) => {
      if (subject.echo === undefined) {
        context.skip(`${name}: the target cannot echo the credential`);
        return;
      }
      const { dispatcher } = await world.dispatcher();
      const { executionId } = await world.call('conformance_echo', subject.echo.args);
      await world.dispatch(executionId, dispatcher);
      const body = (await world.resultBody(executionId)) ?? '';
      expect(body.length).toBeGreaterThan(0);
      for (const prefix of prefixesOf(subject.credential.value)) expect(body.includes(prefix), `the answer holds ${prefix.length} characters of the credential: ${body}`).toBe(false);
    });

    it('given every case above, then neither the credential nor any prefix of it is in the journal, a sealed result or a log line', async () => {
      const secret = subject.credential.value;
      const written = await world.everythingWritten();
      const logged = world.logs.join('\n');
      expect(written.length).toBeGreaterThan(0);
      for (const prefix of prefixesOf(secret)) {
        expect(written.includes(prefix), `the journal or a sealed result holds ${prefix.length} characters of the credential`).toBe(false);
        expect(logged.includes(prefix), `a log line holds ${prefix.length} characters of the credential`).toBe(false);
      }
    });
  });
}

/** Every prefix of a secret long enough to say something of it. */
function prefixesOf(secret: string): string[] {
  return Array.from({ length: Math.max(0, secret.length - MIN_PREFIX + 1) }, (_, i) => secret.slice(0, MIN_PREFIX + i));
}

async function until(condition: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
