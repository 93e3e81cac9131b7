import type { ExecutionId, KitChannel, OperationClass } from '@oncegate/dispatcher-kit';
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
  /** The channel under test, as its module exports it. */
  readonly kit: KitChannel;
  /**
   * A contract file with a tool `conformance_<class>` for each class of the suite's options, each naming the
   * credential and effecting the target once per execution.
   */
  readonly contract: string;
  /**
   * The vault credential the tools name; its value holds the canary that must never be seen again. A channel that
   * needs none leaves it out (and its tools name none): the cases about the credential are skipped, saying why.
   */
  readonly credential?: WorldCredential;
  /** The channel's real target, and the faults the suite makes there. */
  readonly target: ConformanceTarget;
  /**
   * A tool `conformance_echo` (class read_only) whose target answers with the credential as it received it, when the
   * channel's target can do that: its answer must reach the agent without the credential or any prefix of it.
   */
  readonly echo?: { readonly args: Record<string, unknown> };
  /** Arguments for the `n`th call of a class's tool: each call a distinct intent. */
  args(operationClass: OperationClass, n: number): Record<string, unknown>;
  /** Releases the target and whatever the subject opened (called once, after the last case). */
  close(): Promise<void>;
}

/** What the suite runs for a channel, and the cases it skips with the reason. */
export interface ConformanceOptions {
  /** The classes the channel declares, each with its tool in the subject's contract. */
  readonly classes: readonly OperationClass[];
  /** Why the suite cannot run here (a server missing): every case is skipped with it. */
  readonly skip?: () => string | undefined;
  /** Why the channel's target cannot echo the credential back (the subject has no `echo`): that case is skipped with it. */
  readonly noEcho?: string;
  /** Why the channel needs no credential (the subject has none): the credential's cases are skipped with it. */
  readonly noCredential?: string;
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
 * The parts of a test runner the suite is written with, so that it runs under any runner: `vitestRunner` and
 * `nodeTestRunner` are given; another runner needs these five functions. Assertions are the suite's own (plain errors
 * that say what broke), not the runner's.
 */
export interface ConformanceRunner {
  /** A group of cases. */
  describe(name: string, body: () => void): void;
  /** A case; `timeoutMs` is the most it may take. */
  it(name: string, body: () => Promise<void>, timeoutMs: number): void;
  /** A case that does not run, and why. */
  skip(name: string, reason: string): void;
  /** Runs once before the group's cases. */
  beforeAll(body: () => Promise<void>, timeoutMs: number): void;
  /** Runs once after the group's cases, whether they passed or not. */
  afterAll(body: () => Promise<void>, timeoutMs: number): void;
}

/** A promise of the suite broken: what was expected, what happened, and the execution's events when they help. */
export class ConformanceFailure extends Error {
  /** `ConformanceFailure`. */
  override readonly name = 'ConformanceFailure';
}

function check(condition: boolean, message: () => string): void {
  if (!condition) throw new ConformanceFailure(message());
}

/** Longest a case may take: a withheld answer waits for the contract's response timeout (2 s in the examples). */
const CASE_TIMEOUT_MS = 60_000;
const SETUP_TIMEOUT_MS = 120_000;

/**
 * The dispatcher kit's conformance suite (docs/dispatchers.md), under `runner`: for each class the channel declares,
 * against its real target, it checks that `Dispatched` is durable before anything is sent, that the execution id is
 * the idempotency key, that definite and unknown outcomes are told apart (target down: nothing sent; answer lost or
 * late past the response timeout: unknown), that recovery by class after a lost answer, a timeout, a retry and a
 * killed dispatcher leaves exactly one effect, and that the credential's canary — nor any prefix of it — appears in
 * the journal, the sealed results or the logs. A broken promise fails with a `ConformanceFailure` that says which.
 */
export function defineDispatcherConformance(runner: ConformanceRunner, name: string, open: () => Promise<ConformanceSubject>, options: ConformanceOptions): void {
  const skipped = options.skip?.();
  const title = `dispatcher conformance: ${name}`;
  if (skipped !== undefined) {
    runner.skip(title, skipped);
    return;
  }
  runner.describe(title, () => {
    let subject: ConformanceSubject;
    let world: DispatcherWorld;
    const calls = new Map<OperationClass, number>();
    const call = (operationClass: OperationClass) => {
      const n = (calls.get(operationClass) ?? 0) + 1;
      calls.set(operationClass, n);
      return world.call(`conformance_${operationClass}`, subject.args(operationClass, n));
    };
    const types = async (executionId: ExecutionId) => (await world.events(executionId)).map((event) => event.type);
    const history = async (executionId: ExecutionId) => `its events: ${(await types(executionId)).join(' → ')}`;
    const count = async (executionId: ExecutionId, type: string) => (await types(executionId)).filter((each) => each === type).length;
    /** The target took effect as often as the class allows: never for a read, once for every other class. */
    const effectsOnce = async (operationClass: OperationClass, executionId: ExecutionId, when: string) => {
      const effects = await subject.target.effects(executionId);
      const wanted = operationClass === 'read_only' ? 0 : 1;
      check(effects === wanted, () =>
        effects > wanted
          ? `${when}: ${effects} effects at the target for one execution (${executionId}), expected ${wanted}`
          : `${when}: no effect at the target for execution ${executionId}, expected one`,
      );
    };

    runner.beforeAll(async () => {
      subject = await open();
      world = await DispatcherWorld.open({ kit: subject.kit, contract: subject.contract, ...(subject.credential ? { credential: subject.credential } : {}) });
    }, SETUP_TIMEOUT_MS);

    runner.afterAll(async () => {
      await world?.close();
      await subject?.close();
    }, SETUP_TIMEOUT_MS);

    for (const operationClass of options.classes) {
      runner.describe(`class ${operationClass}`, () => {
        runner.it('given a call, then Dispatched is durable before the attempt, the outcome is observed, and the target took effect once under the execution id', async () => {
          const { dispatcher } = await world.dispatcher();
          const { executionId } = await call(operationClass);
          await world.dispatch(executionId, dispatcher);
          const seen = await types(executionId);
          const wanted = ['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved'];
          check(seen.join() === wanted.join(), () => `a call recorded ${seen.join(' → ')}, expected ${wanted.join(' → ')}`);
          const observed = (await world.last(executionId, 'OutcomeObserved'))!.data as { attempt?: number; outcome?: string; source?: string };
          check(observed.attempt === 1 && observed.outcome === 'succeeded' && observed.source === 'response', () => `the first attempt's outcome is ${JSON.stringify(observed)}, expected attempt 1 succeeded from the target's response`);
          await effectsOnce(operationClass, executionId, 'after one call');
        }, CASE_TIMEOUT_MS);

        runner.it('given the dispatcher dies before its Dispatched is durable, then nothing is sent', async () => {
          const { dispatcher, kill } = await world.dispatcher();
          const { executionId, authorized } = await call(operationClass);
          // Killed before anything: its Dispatched never lands, so its attempt must never start.
          kill();
          const handled = dispatcher.onAuthorized(authorized);
          await new Promise((resolve) => setTimeout(resolve, 500));
          const seen = await types(executionId);
          check(seen.join() === 'ExecutionAccepted,ExecutionAuthorized', () => `a dispatcher killed before Dispatched was durable still recorded ${seen.slice(2).join(', ')}`);
          const effects = await subject.target.effects(executionId);
          check(effects === 0, () => `the target took effect ${effects} time(s) though Dispatched was never durable: an attempt left before its record`);
          void handled;
        }, CASE_TIMEOUT_MS);

        runner.it('given the target unreachable, then the failure is definite and says nothing was sent', async () => {
          const { dispatcher } = await world.dispatcher();
          const { executionId } = await call(operationClass);
          await subject.target.unreachable(true);
          try {
            await world.dispatch(executionId, dispatcher);
          } finally {
            await subject.target.unreachable(false);
          }
          const observed = (await world.last(executionId, 'OutcomeObserved'))?.data as { attempt?: number; outcome?: string; source?: string } | undefined;
          check(observed?.outcome === 'failed' && observed.source === 'not_sent' && observed.attempt === 1, () =>
            `an unreachable target must be a definite failure in which nothing was sent (OutcomeObserved failed, source not_sent); ${observed === undefined ? 'no OutcomeObserved was recorded' : `got ${JSON.stringify(observed)}`}`,
          );
          const effects = await subject.target.effects(executionId);
          check(effects === 0, () => `the target took effect ${effects} time(s) while it was unreachable`);
        }, CASE_TIMEOUT_MS);

        /** The first attempt took effect and its answer never came: the agent retries, and recovery by class follows. */
        async function unknownThenRetried(fault: () => void | Promise<void>, what: string): Promise<void> {
          const { dispatcher } = await world.dispatcher();
          const { executionId } = await call(operationClass);
          await fault();
          await world.dispatch(executionId, dispatcher);
          const unknown = (await world.last(executionId, 'OutcomeUnknown'))?.data as { attempt?: number } | undefined;
          const before = await history(executionId);
          check(unknown?.attempt === 1, () => `${what}: the outcome must be unknown (OutcomeUnknown for attempt 1); ${before}`);

          await world.retry(executionId);
          const state = await world.recover(executionId, dispatcher);
          const expected = AFTER_LOST_ANSWER[operationClass];
          const seen = await history(executionId);
          check(state.status === expected.status, () => `${what}, then the agent's retry: ${operationClass} ended ${state.status}, expected ${expected.status}; ${seen}`);
          const dispatches = await count(executionId, 'Dispatched');
          check(dispatches === expected.dispatches, () => `${what}, then the agent's retry: ${dispatches} attempts of ${operationClass}, expected ${expected.dispatches}; ${seen}`);
          if (expected.evidence !== undefined) {
            const evidence = await count(executionId, expected.evidence);
            check(evidence === 1, () => `${what}: recovery of ${operationClass} must gather its evidence once (${expected.evidence}), got ${evidence}; ${seen}`);
          }
          await effectsOnce(operationClass, executionId, `${what}, then the agent's retry`);
        }

        runner.it('given the answer is lost after the effect, when the agent retries, then recovery by class leaves exactly one effect', () =>
          unknownThenRetried(() => subject.target.loseNextAnswer(), 'the answer lost after the effect'), CASE_TIMEOUT_MS);

        runner.it('given the answer never comes on a connection left open, then the response timeout makes the outcome unknown, and recovery by class leaves one effect', () =>
          unknownThenRetried(() => subject.target.withholdNextAnswer(), 'the answer withheld past the response timeout'), CASE_TIMEOUT_MS);

        runner.it('given the dispatcher is killed with its attempt in flight, when the sweeper finds it gone and the agent retries, then one effect', async () => {
          const first = await world.dispatcher();
          const { executionId, authorized } = await call(operationClass);
          await subject.target.loseNextAnswer();
          // The attempt leaves once Dispatched is durable; the process dies before it can record anything.
          first.killAfterDispatched();
          await first.dispatcher.onAuthorized(authorized);
          const dispatched = await count(executionId, 'Dispatched');
          check(dispatched === 1, () => `the killed dispatcher's attempt recorded ${dispatched} Dispatched, expected 1`);
          // The first attempt reached the target and lost its answer before anything else is sent.
          await subject.target.faultStruck();
          if (operationClass !== 'read_only') {
            // Waits for the first effect only: a target that took effect more than once says so now, not after the wait.
            await until(async () => (await subject.target.effects(executionId)) >= 1, `the killed dispatcher's attempt to take effect at the target (execution ${executionId})`);
            await effectsOnce(operationClass, executionId, "the killed dispatcher's attempt");
          }

          await world.sweep();
          const unknown = (await world.last(executionId, 'OutcomeUnknown'))?.data as { attempt?: number; reason?: string } | undefined;
          const swept = await history(executionId);
          check(unknown?.attempt === 1 && unknown.reason === 'dispatcher_lost', () => `the sweeper must record the killed dispatcher's attempt as unknown (dispatcher_lost); ${swept}`);
          const second = await world.dispatcher();
          await world.retry(executionId);
          const state = await world.recover(executionId, second.dispatcher);
          const expected = AFTER_LOST_ANSWER[operationClass];
          const recovered = await history(executionId);
          check(state.status === expected.status, () => `a killed dispatcher, then the agent's retry: ${operationClass} ended ${state.status}, expected ${expected.status}; ${recovered}`);
          await effectsOnce(operationClass, executionId, 'a killed dispatcher, then the agent\'s retry');
        }, CASE_TIMEOUT_MS);
      });
    }

    const echoTitle = 'given a target that echoes the credential, then the answer holds neither it nor any prefix of it';
    const canaryTitle = 'given every case above, then neither the credential nor any prefix of it is in the journal, a sealed result or a log line';
    const needs = (what: 'credential' | 'echo', present: boolean, reason: string) =>
      check(present, () => `the subject has no ${what}: give one, or say why in the suite's options (${reason})`);
    const noEcho = options.noCredential ?? options.noEcho;
    if (noEcho !== undefined) runner.skip(echoTitle, noEcho);
    else {
      runner.it(echoTitle, async () => {
        needs('credential', subject.credential !== undefined, 'noCredential');
        needs('echo', subject.echo !== undefined, 'noEcho');
        const { dispatcher } = await world.dispatcher();
        const { executionId } = await world.call('conformance_echo', subject.echo!.args);
        await world.dispatch(executionId, dispatcher);
        const body = (await world.resultBody(executionId)) ?? '';
        check(body.length > 0, () => `the echo tool's answer is empty: it must hold what the target saw (${executionId})`);
        for (const prefix of prefixesOf(subject.credential!.value)) check(!body.includes(prefix), () => `the answer to the agent holds ${prefix.length} characters of the credential: ${body}`);
      }, CASE_TIMEOUT_MS);
    }
    if (options.noCredential !== undefined) runner.skip(canaryTitle, options.noCredential);
    else {
      runner.it(canaryTitle, async () => {
        needs('credential', subject.credential !== undefined, 'noCredential');
        const written = await world.everythingWritten();
        const logged = world.logs.join('\n');
        check(written.length > 0, () => 'nothing was written to the journal or the sealed results: the cases above did not run');
        for (const prefix of prefixesOf(subject.credential!.value)) {
          check(!written.includes(prefix), () => `the journal or a sealed result holds ${prefix.length} characters of the credential`);
          check(!logged.includes(prefix), () => `a log line holds ${prefix.length} characters of the credential`);
        }
      }, CASE_TIMEOUT_MS);
    }
  });
}

/** Every prefix of a secret long enough to say something of it. */
function prefixesOf(secret: string): string[] {
  return Array.from({ length: Math.max(0, secret.length - MIN_PREFIX + 1) }, (_, i) => secret.slice(0, MIN_PREFIX + i));
}

async function until(condition: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new ConformanceFailure(`gave up after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
