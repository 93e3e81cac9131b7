import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelAttempt, ResumedTask, SendOutcome } from './channel-definition';
import { defineChannel } from './define-channel';
import { DispatcherWorld } from './testing/dispatcher-world';

const SECRET = 'kit-canary-6f1e9a2b7c3d';
const CARD = 'card-canary-90ab12cd34';

/** A channel whose target echoes whatever it is given: the credential, the arguments, around a padding the agent chose. */
function echoChannel(seen: { secret?: string; afterSend?: Buffer }, answer: (attempt: ChannelAttempt) => SendOutcome) {
  return defineChannel({
    name: 'echo',
    classes: ['idempotent_write'],
    contract: { check: () => undefined },
    credentialKinds: ['password'],
    open: () => ({
      async send(attempt) {
        seen.secret = attempt.secret?.toString('utf8');
        seen.afterSend = attempt.secret;
        return answer(attempt);
      },
    }),
  });
}

function contract(responseBytes: number): string {
  return `version: 1
tools:
  - name: echo
    description: Echo what the target got.
    class: idempotent_write
    channel: echo
    target: test/echo
    credential_ref: echo-secret
    correlation_window: 10m
    secret_arguments: [card]
    input_schema: { type: object, properties: { pad: { type: integer }, card: { type: string } }, required: [pad, card], additionalProperties: false }
    plugin: { host: 127.0.0.1, port: 7001 }
    limits: { response_bytes: ${responseBytes}B }
`;
}

/** The kit's own side of a plugin channel: the credential handed over once and wiped, secrets hidden before the cut. */
describe('the dispatcher kit around a plugin channel (SQLite journal, real vault)', () => {
  let world: DispatcherWorld | undefined;

  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  const open = async (kit: ReturnType<typeof echoChannel>, responseBytes = 1_000_000, bindings = ['127.0.0.1:7001']) =>
    (world = await DispatcherWorld.open({ kit, contract: contract(responseBytes), credential: { ref: 'echo-secret', kind: 'password', bindings, value: SECRET } }));

  it('given a tool naming a password bound to its section, then the driver gets it for the send and it is zero-filled after', async () => {
    const seen: { secret?: string; afterSend?: Buffer } = {};
    const w = await open(echoChannel(seen, () => ({ kind: 'observed', outcome: 'succeeded', body: 'ok' })));
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);

    expect(seen.secret).toBe(SECRET);
    expect([...seen.afterSend!].every((byte) => byte === 0)).toBe(true);
    expect(await w.resultBody(executionId)).toBe('ok');
  });

  it.each([0, 3, 9, 17, 40])('given a target that echoes the credential and a secret argument after %i bytes of padding, then neither reaches the agent, whole or cut', async (pad) => {
    const w = await open(
      echoChannel({}, (attempt) => ({ kind: 'observed', outcome: 'succeeded', body: `${'.'.repeat(attempt.args['pad'] as number)}${attempt.secret!.toString('utf8')} and ${String(attempt.args['card'])}` })),
      24,
    );
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad, card: CARD });
    await w.dispatch(executionId, dispatcher);

    const body = (await w.resultBody(executionId))!;
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(24);
    for (const secret of [SECRET, CARD]) {
      for (let length = 6; length <= secret.length; length += 1) expect(body, body).not.toContain(secret.slice(0, length));
    }
    expect(await w.everythingWritten()).not.toContain(SECRET.slice(0, 6));
  });

  it('given the credential bound to another port, then the call is denied before Dispatched and the driver is never asked', async () => {
    const seen: { secret?: string } = {};
    const w = await open(echoChannel(seen, () => ({ kind: 'observed', outcome: 'succeeded', body: 'sent' })), 1_000, ['127.0.0.1:7002']);
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);

    expect((await w.events(executionId)).map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'ExecutionDenied']);
    expect((await w.last(executionId, 'ExecutionDenied'))!.data).toMatchObject({ basis: 'credential_unresolved' });
    expect(seen.secret).toBeUndefined();
  });

  it('given a driver whose send throws, then the outcome is recorded as unknown, never as a failure it cannot vouch for', async () => {
    const w = await open(
      echoChannel({}, () => {
        throw new Error(`socket closed while holding ${SECRET}`);
      }),
    );
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);

    expect((await w.last(executionId, 'OutcomeUnknown'))!.data).toMatchObject({ attempt: 1, reason: 'connection_reset' });
    expect(w.logs.join('\n')).toContain('the echo channel');
    expect(w.logs.join('\n')).not.toContain(SECRET);
  });

  it.each([
    ['a channel that gathers no status', undefined, 'not asked: the echo channel gathers no such evidence'],
    ['a status that quotes the credential and a secret argument', `seen ${SECRET} for ${CARD}`, 'seen [redacted] for [redacted]'],
  ])('given a conditional write whose outcome is unknown and %s, when the agent retries, then it is held for review and the finding holds no secret', async (_what, observed, recorded) => {
    const kit = defineChannel({
      name: 'echo',
      contract: { check: () => undefined },
      credentialKinds: ['password'],
      open: () => ({
        send: async () => ({ kind: 'unknown', reason: 'connection_reset' }),
        ...(observed === undefined ? {} : { queryStatus: async () => ({ preconditionHolds: false, observedStatus: observed }) }),
      }),
    });
    const conditional = contract(1_000).replace('class: idempotent_write', 'class: conditional_write');
    world = await DispatcherWorld.open({ kit, contract: conditional, credential: { ref: 'echo-secret', kind: 'password', bindings: ['127.0.0.1:7001'], value: SECRET } });
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('echo', { pad: 0, card: CARD });
    await world.dispatch(executionId, dispatcher);
    await world.retry(executionId);

    expect((await world.recover(executionId, dispatcher)).status).toBe('needs_review');
    expect((await world.last(executionId, 'StatusQueried'))!.data).toMatchObject({ preconditionHolds: false, observedStatus: recorded });
  });

  /** A channel whose first attempt ends unknown and whose later attempts find the target refusing connections. */
  const unknownThenRefused = (counter: { attempts: number }) =>
    defineChannel({
      name: 'echo',
      contract: { check: () => undefined },
      credentialKinds: ['password'],
      open: () => ({
        send: async () => ((counter.attempts += 1) === 1 ? { kind: 'unknown', reason: 'connection_reset' } : { kind: 'not_sent', reason: 'connection refused' }),
      }),
    });

  it('given attempt 1 unknown, when the agent retries and attempt 2 sends nothing, then the execution stays unknown: attempt 1 may have taken effect', async () => {
    const counter = { attempts: 0 };
    const w = await open(unknownThenRefused(counter) as ReturnType<typeof echoChannel>);
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);
    await w.retry(executionId);

    const state = await w.recover(executionId, dispatcher);

    expect(counter.attempts).toBe(2);
    expect(state.status).toBe('outcome_unknown');
    expect((await w.last(executionId, 'OutcomeUnknown'))!.data).toMatchObject({ attempt: 2, reason: 'not_sent_after_unknown' });
    expect(await w.last(executionId, 'OutcomeObserved')).toBeUndefined();
  });

  it('given attempt 1 unknown and held for review, when an operator resolves it as not executed, then nothing is sent until the agent retries, and when attempt 2 sends nothing that failure is definite', async () => {
    const counter = { attempts: 0 };
    const kit = unknownThenRefused(counter);
    world = await DispatcherWorld.open({
      kit,
      contract: contract(1_000).replace('class: idempotent_write', 'class: irreversible'),
      credential: { ref: 'echo-secret', kind: 'password', bindings: ['127.0.0.1:7001'], value: SECRET },
    });
    const w = world;
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);
    await w.retry(executionId);
    expect((await w.recover(executionId, dispatcher)).status).toBe('needs_review');

    await w.resolveReview(executionId, 'not_executed', 'the target shows nothing of it');
    expect((await w.recover(executionId, dispatcher)).status).toBe('not_executed');
    expect(counter.attempts).toBe(1);

    await w.retry(executionId);
    const state = await w.recover(executionId, dispatcher);

    expect(counter.attempts).toBe(2);
    expect(state.status).toBe('failed');
    expect((await w.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 2, source: 'not_sent', notSentReason: 'connection refused' });
  });

  /** A channel whose target runs each call as a task: the attempt records the task's reference, then loses its answer. */
  const taskChannel = (resumed: (task: Readonly<Record<string, unknown>>, attempt: ChannelAttempt) => Promise<ResumedTask>, recorded: boolean[] = []) =>
    defineChannel({
      name: 'echo',
      contract: { check: () => undefined },
      credentialKinds: ['password'],
      open: () => ({
        async send(attempt) {
          recorded.push(await attempt.recordTask({ taskId: `task-of-${attempt.executionId}`, generation: 'v1' }));
          // A second reference for the same attempt is refused: recovery resumes the one the target first gave.
          recorded.push(await attempt.recordTask({ taskId: 'another' }));
          return { kind: 'unknown', reason: 'connection_reset' };
        },
        resumeTask: (attempt, task) => resumed(task, attempt),
      }),
    });
  const openTask = async (kit: ReturnType<typeof taskChannel>, operationClass: string) =>
    (world = await DispatcherWorld.open({
      kit,
      contract: contract(64).replace('class: idempotent_write', `class: ${operationClass}`),
      credential: { ref: 'echo-secret', kind: 'password', bindings: ['127.0.0.1:7001'], value: SECRET },
    }));

  it.each(['irreversible', 'conditional_write', 'read_only'])(
    "given a call of class %s the target ran as a task whose answer was lost, then recovery resumes the task and records the target's answer as the outcome, secrets hidden, with no second send",
    async (operationClass) => {
      const sends = { count: 0 };
      const resumedWith: Array<Readonly<Record<string, unknown>>> = [];
      const recorded: boolean[] = [];
      const kit = taskChannel(async (task, attempt) => {
        resumedWith.push(task);
        return { kind: 'observed', outcome: 'succeeded', body: `done by ${String(task['taskId'])} with ${attempt.secret!.toString('utf8')}` };
      }, recorded);
      const original = kit.definition.open;
      const w = await openTask(
        defineChannel({ ...kit.definition, open: async (context) => {
          const driver = await original(context);
          return { ...driver, send: (attempt: ChannelAttempt) => ((sends.count += 1), driver.send(attempt)) };
        } }) as ReturnType<typeof taskChannel>,
        operationClass,
      );
      const { dispatcher } = await w.dispatcher();
      const { executionId } = await w.call('echo', { pad: 0, card: CARD });
      await w.dispatch(executionId, dispatcher);
      expect(recorded).toEqual([true, false]);
      expect((await w.last(executionId, 'AttemptTaskStarted'))!.data).toMatchObject({ attempt: 1, task: { taskId: `task-of-${executionId}`, generation: 'v1' } });

      const state = await w.recover(executionId, dispatcher);

      expect(state.status).toBe('completed');
      expect(sends.count).toBe(1);
      expect(resumedWith).toEqual([{ taskId: `task-of-${executionId}`, generation: 'v1' }]);
      expect((await w.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 1, outcome: 'succeeded', source: 'task' });
      const body = (await w.resultBody(executionId))!;
      expect(body.startsWith(`done by task-of-${executionId} with `)).toBe(true);
      expect(body).not.toContain(SECRET.slice(0, 6));
    },
  );

  it.each([
    ['the target no longer knows the task', async (): Promise<ResumedTask> => ({ kind: 'unsettled', finding: 'lost', reason: `task not found (token ${SECRET})` }), 'lost'],
    ['the channel cannot reach the target', async (): Promise<ResumedTask> => Promise.reject(new Error(`connect ECONNREFUSED, sent ${SECRET}`)), 'unreachable'],
  ])('given an irreversible call whose task is resumed and %s, then the finding is recorded without a secret and the call is held for review', async (_what, resume, finding) => {
    const w = await openTask(taskChannel(resume), 'irreversible');
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);

    const state = await w.recover(executionId, dispatcher);

    expect(state.status).toBe('needs_review');
    expect(state.review?.reason).toBe('irreversible_outcome_unknown');
    const checked = (await w.last(executionId, 'AttemptTaskChecked'))!.data as { finding: string; reason: string };
    expect(checked.finding).toBe(finding);
    expect(checked.reason).not.toContain(SECRET.slice(0, 6));
    expect(await w.everythingWritten()).not.toContain(SECRET.slice(0, 6));
  });

  it('given a task reference that holds the credential or a secret argument, then it is not recorded, and the journal holds neither', async () => {
    const recorded: boolean[] = [];
    const kit = defineChannel({
      name: 'echo',
      contract: { check: () => undefined },
      credentialKinds: ['password'],
      open: () => ({
        async send(attempt) {
          recorded.push(await attempt.recordTask({ taskId: 't-1', token: attempt.secret!.toString('utf8') }));
          recorded.push(await attempt.recordTask({ taskId: 't-2', note: `for ${String(attempt.args['card'])}` }));
          return { kind: 'unknown', reason: 'connection_reset' };
        },
      }),
    });
    const w = await openTask(kit as ReturnType<typeof taskChannel>, 'irreversible');
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);

    expect(recorded).toEqual([false, false]);
    expect(await w.last(executionId, 'AttemptTaskStarted')).toBeUndefined();
    const written = await w.everythingWritten();
    expect(written).not.toContain(SECRET);
    expect(written).not.toContain(CARD);
    expect(w.logs.join('\n')).toContain('holds a secret: it was not recorded');
  });

  it('given an idempotent write whose task the target no longer knows, then the class decides: sent again on the agent retry, under the same execution', async () => {
    const sends = { count: 0 };
    const kit = defineChannel({
      name: 'echo',
      contract: { check: () => undefined },
      credentialKinds: ['password'],
      open: () => ({
        async send(attempt) {
          sends.count += 1;
          if (attempt.attempt > 1) return { kind: 'observed', outcome: 'succeeded', body: 'set again' };
          await attempt.recordTask({ taskId: 't-1' });
          return { kind: 'unknown', reason: 'timeout_after_send' };
        },
        resumeTask: async () => ({ kind: 'unsettled', finding: 'lost', reason: 'task t-1 not found' }),
      }),
    });
    const w = await openTask(kit as ReturnType<typeof taskChannel>, 'idempotent_write');
    const { dispatcher } = await w.dispatcher();
    const { executionId } = await w.call('echo', { pad: 0, card: CARD });
    await w.dispatch(executionId, dispatcher);
    expect((await w.recover(executionId, dispatcher)).status).toBe('outcome_unknown');
    expect(sends.count).toBe(1);

    await w.retry(executionId);
    const state = await w.recover(executionId, dispatcher);

    expect(state.status).toBe('completed');
    expect(sends.count).toBe(2);
    expect(await w.resultBody(executionId)).toBe('set again');
  });

  it('given a channel name that is not one, or credential kinds without a section, then defineChannel refuses it', () => {
    expect(() => defineChannel({ name: 'Bad Name', open: () => ({ send: async () => ({ kind: 'not_sent', reason: 'x' }) }) })).toThrow("'Bad Name' is not a channel name");
    expect(() => defineChannel({ name: 'nosection', credentialKinds: ['password'], open: () => ({ send: async () => ({ kind: 'not_sent', reason: 'x' }) }) })).toThrow(
      'credentialKinds needs a contract section',
    );
  });
});
