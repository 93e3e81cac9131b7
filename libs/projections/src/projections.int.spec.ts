import { mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExecutionCommand, ExecutionId, IsoInstant } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { intentClaimEntry, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the real SQLite adapter
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { fingerprintIndex } from './builtin/fingerprint-index';
import { openExecutions } from './builtin/open-executions';
import { eventsFromJournalFile, JOURNAL_EXPORT_FORMAT, JournalFileError, journalFileSource, storeSource } from './event-sources';
import { gatherInvestigationEvents } from './gather-investigation-events';
import { investigate } from './investigate';
import { loadProjectionModule, ProjectionModuleError } from './load-projection';
import { ProjectionCheckpointError, runProjection } from './run-projection';
import { fold } from './test-support/fold';
import { droppedConnectionThenAttach, newExecutionAfterGrace, twoActors } from './test-support/gateway-scenarios';
import { executionIdOf, fingerprintOf, T0 } from './test-support/recorded-history';
import { writeRows } from './write-rows';

let dir: string;
let store: EventStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncegate-projections-'));
  store = openSqliteEventStore({ file: join(dir, 'events.db') });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Appends recorded events (type, data, metadata) to the store one by one, in their global order. The store assigns
 * new event ids, so two histories (whose ids restart) can share one store.
 */
async function appendAll(events: readonly RecordedEvent[]): Promise<void> {
  for (const event of events) {
    const { eventId: _eventId, ...metadata } = event.metadata;
    await store.appendToStream(event.streamId, [{ type: event.type, data: event.data, metadata }]);
  }
}

async function allFromStore(): Promise<RecordedEvent[]> {
  return (await store.readAll({ maxCount: 10_000 })).events as RecordedEvent[];
}

async function exportJournal(file: string, extraLines: string[] = []): Promise<void> {
  const lines = [JSON.stringify({ format: JOURNAL_EXPORT_FORMAT, exportedAt: T0 })];
  for (const event of await allFromStore()) lines.push(JSON.stringify(event));
  writeFileSync(file, `${[...lines, ...extraLines].join('\n')}\n`);
}

describe('runProjection on a SQLite event store (sqlite adapter)', () => {
  it('given the gateway scenarios in the store, then the rows equal the pure fold and progress reaches the head', async () => {
    const scenario = twoActors();
    await appendAll(scenario.history.events);
    const progress: Array<[number, number | undefined]> = [];
    const result = await runProjection({
      projection: fingerprintIndex,
      source: storeSource(store, 3),
      onProgress: (done, total) => progress.push([done, total]),
    });
    expect(result.rows).toEqual(fingerprintIndex.rows(fold(fingerprintIndex, scenario.history.events), {}));
    expect(result.rows).toHaveLength(2);
    expect(result.position).toBe(await store.headPosition());
    expect(progress.at(-1)).toEqual([result.position, result.position]);
  });

  it('given a checkpoint, then a later run resumes after it; rebuild starts from zero; a conflicting from is refused', async () => {
    const checkpointFile = join(dir, 'fingerprint-index.checkpoint.json');
    const first = droppedConnectionThenAttach();
    await appendAll(first.history.events);
    const initial = await runProjection({ projection: fingerprintIndex, source: storeSource(store), checkpointFile, checkpointEvery: 2 });
    expect(initial.resumedFrom).toBeUndefined();
    expect(JSON.parse(readFileSync(checkpointFile, 'utf8'))).toMatchObject({ projection: 'fingerprint-index', position: initial.position, events: initial.events });

    await appendAll(newExecutionAfterGrace().history.events);
    const resumed = await runProjection({ projection: fingerprintIndex, source: storeSource(store), checkpointFile });
    expect(resumed.resumedFrom).toBe(initial.position);
    expect(resumed.rows).toHaveLength(2);
    const rebuilt = await runProjection({ projection: fingerprintIndex, source: storeSource(store), checkpointFile, rebuild: true });
    expect(rebuilt.resumedFrom).toBeUndefined();
    expect(rebuilt.rows).toEqual(resumed.rows);
    expect(rebuilt.events).toBe(resumed.events);

    await expect(runProjection({ projection: fingerprintIndex, source: storeSource(store), checkpointFile, from: 1 })).rejects.toThrow(
      ProjectionCheckpointError,
    );
    await expect(runProjection({ projection: openExecutions, source: storeSource(store), checkpointFile })).rejects.toThrow(
      /belongs to projection "fingerprint-index", not "open-executions"/,
    );
  });

  it('given from, then only events after that position are folded', async () => {
    await appendAll(twoActors().history.events);
    const all = await allFromStore();
    const secondClaim = all.filter((event) => event.type === 'IntentClaimed')[1]!;
    const result = await runProjection({ projection: fingerprintIndex, source: storeSource(store), from: secondClaim.position });
    expect(result.rows.map((row) => row['actor'])).toEqual(['agent:second-agent']);
  });
});

describe('runProjection on a journal export file', () => {
  it('given an NDJSON export with a header and a seal line, then it folds the same rows as the store, streaming from after', async () => {
    await appendAll(newExecutionAfterGrace().history.events);
    const file = join(dir, 'journal.ndjson');
    await exportJournal(file, [JSON.stringify({ kind: 'seal', signature: 'not-an-event' })]);
    const fromFile = await runProjection({ projection: fingerprintIndex, source: journalFileSource(file) });
    const fromStore = await runProjection({ projection: fingerprintIndex, source: storeSource(store) });
    expect(fromFile.rows).toEqual(fromStore.rows);
    expect(fromFile.position).toBe(fromStore.position);

    const after: RecordedEvent[] = [];
    for await (const event of eventsFromJournalFile(file, { after: 5, filter: { eventTypes: ['ExecutionAccepted'] } })) after.push(event);
    expect(after.every((event) => event.position > 5 && event.type === 'ExecutionAccepted')).toBe(true);
    expect(after).toHaveLength(1);
  });

  it('given a file without the header, or a broken line, then the error names the file and the line', async () => {
    const noHeader = join(dir, 'no-header.ndjson');
    writeFileSync(noHeader, '{"streamId":"x"}\n');
    await expect(runProjection({ projection: fingerprintIndex, source: journalFileSource(noHeader) })).rejects.toThrow(
      `${noHeader}:1: expected a header line {"format":"${JOURNAL_EXPORT_FORMAT}",...}, found no format`,
    );
    const broken = join(dir, 'broken.ndjson');
    writeFileSync(broken, `{"format":"${JOURNAL_EXPORT_FORMAT}"}\n{"streamId":"execution-x","type":"T"}\nnot json\n`);
    const error = await runProjection({ projection: fingerprintIndex, source: journalFileSource(broken) }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(JournalFileError);
    expect(error).toMatchObject({ file: broken, line: 2 });
  });
});

describe('loadProjectionModule and writeRows', () => {
  const userModule = `
    export const projection = {
      name: 'event-types',
      description: 'events per type',
      initialState: () => ({}),
      evolve(state, event) { state[event.type] = (state[event.type] ?? 0) + 1; return state; },
      rows: (state) => Object.entries(state).map(([type, count]) => ({ type, count })),
    };`;

  it('loads a built-in by name and a user module by path, and runs it', async () => {
    expect(await loadProjectionModule('open-executions')).toMatchObject({ builtin: true, origin: 'open-executions' });
    writeFileSync(join(dir, 'event-types.mjs'), userModule);
    const loaded = await loadProjectionModule('event-types.mjs', { cwd: dir });
    expect(loaded).toMatchObject({ builtin: false, origin: join(dir, 'event-types.mjs') });
    await appendAll(droppedConnectionThenAttach().history.events);
    const result = await runProjection({ projection: loaded.projection, source: storeSource(store) });
    expect(result.rows).toContainEqual({ type: 'ResultDeliveryFailed', count: 1 });

    const csv = join(dir, 'out.csv');
    await writeRows(result.rows, csv);
    expect(readFileSync(csv, 'utf8').split('\r\n')[0]).toBe('type,count');
    const json = join(dir, 'out.json');
    await writeRows(result.rows, json);
    expect(JSON.parse(readFileSync(json, 'utf8'))).toEqual(result.rows);
  });

  it('loads a TypeScript module', async () => {
    writeFileSync(join(dir, 'typed.ts'), userModule.replace('initialState: () => ({})', 'initialState: (): Record<string, number> => ({})'));
    expect((await loadProjectionModule(join(dir, 'typed.ts'))).projection.name).toBe('event-types');
  });

  it('refuses a module without a projection, naming the file and what it exports, and an unknown name', async () => {
    const file = join(dir, 'not-one.mjs');
    writeFileSync(file, 'export const helper = 1;\nexport const projection = { name: "x" };\n');
    await expect(loadProjectionModule(file)).rejects.toThrow(
      `${file}: \`projection\` is not a projection: description must be a non-empty string; initialState must be a function; evolve must be a function; rows must be a function`,
    );
    const none = join(dir, 'none.mjs');
    writeFileSync(none, 'export const helper = 1;\n');
    await expect(loadProjectionModule(none)).rejects.toThrow(`${none}: exports no \`projection\` (it exports helper)`);
    await expect(loadProjectionModule('no-such-projection', { cwd: dir })).rejects.toThrow(ProjectionModuleError);
    await expect(loadProjectionModule('no-such-projection', { cwd: dir })).rejects.toThrow(/fingerprint-index, runs-by-actor/);
    expect(existsSync(join(dir, 'no-such-projection'))).toBe(false);
  });
});

describe('gatherInvestigationEvents on a SQLite event store written by the execution journal (sqlite adapter)', () => {
  it('given a delivered call and a new execution after the grace, then both are gathered and investigated from the store', async () => {
    let now = Date.parse(T0);
    const clock: Clock = { now: () => new Date(now) };
    const iso = (): IsoInstant => new Date(now).toISOString() as IsoInstant;
    const fingerprint = fingerprintOf('9a');
    const correlation = { jsonRpcId: 1, sessionId: 'session-s', transport: 'streamable-http' };
    const drive = async (executionId: ExecutionId, command: Omit<ExecutionCommand, 'executionId' | 'now'>, actor = 'service:x') => {
      now += 100;
      await runExecutionCommand(store, executionId, () => ({ ...command, executionId, now: iso() }) as ExecutionCommand, { actor, correlation }, clock);
    };
    const callOnce = async (executionId: ExecutionId) => {
      await store.appendMany([intentClaimEntry({ executionId, fingerprint, claimedAt: iso() }, await store.streamRevision(`intent-k1-${'9a'.repeat(32)}`), 'agent:a', clock)]);
      await drive(
        executionId,
        {
          type: 'AcceptExecution',
          record: { actor: 'agent:a', tool: 'set_config', channel: 'http', target: 't', credential_ref: 'c', method: 'PUT', arguments: { name: 'grace' }, intent_scope: 'actor' },
          fingerprint,
          operationClass: 'idempotent_write',
          intentScope: { kind: 'actor' },
          correlationWindowMs: 300_000,
          redeliveryGraceMs: 60_000,
          attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 30_000, markerBeforeWork: false },
          correlation,
          argumentsRef: null,
        } as Omit<ExecutionCommand, 'executionId' | 'now'>,
        'agent:a',
      );
      await drive(executionId, { type: 'AuthorizeExecution', basis: 'policy' } as never);
      await drive(executionId, { type: 'RecordDispatch', dispatcherId: 'd1' } as never);
      await drive(executionId, { type: 'ObserveOutcome', attempt: 1, outcome: 'succeeded', source: 'response', targetStatus: 200, exitCode: null, resultRef: 'r', resultDigest: null } as never);
      await drive(executionId, { type: 'RecordResultDelivered', correlation, replayed: false, evidence: 'a later request on the same MCP session after the response was written' } as never);
    };
    const [first, second] = [executionIdOf('P'), executionIdOf('Q')];
    await callOnce(first);
    await appendAll(twoActors().history.events);
    now += 120_000;
    await callOnce(second);

    const events = await gatherInvestigationEvents(store, { fingerprint });
    expect(new Set(events.map((event) => event.streamId))).toEqual(
      new Set([`intent-k1-${'9a'.repeat(32)}`, `execution-${first}`, `execution-${second}`]),
    );
    const inv = investigate(events, { fingerprint });
    expect(inv.answers.secondCall.facts.newExecutions).toEqual([
      expect.objectContaining({ executionId: second, priorExecutionId: first, reason: 'redelivery_grace_elapsed' }),
    ]);
    expect(inv.answers.firstCall.summary).toContain('yes: authorized (policy)');

    const fromExecution = await gatherInvestigationEvents(store, { executionId: first });
    expect(fromExecution).toEqual(events);
    expect(await gatherInvestigationEvents(store, { executionId: executionIdOf('Z') })).toEqual([]);
  });
});

describe('a projection with parameters, and a state that must stay JSON', () => {
  /** Counts the executions one actor accepted: its actor is a parameter. */
  const byActor = {
    name: 'accepted-by-actor',
    description: 'executions accepted for one actor',
    params: { actor: { description: 'the actor, as agent:<name>' }, label: { description: 'the label of the row', default: 'accepted' } },
    filter: { eventTypes: ['ExecutionAccepted'] },
    initialState: () => ({ count: 0 }),
    evolve: (state: { count: number }, event: RecordedEvent, params: Readonly<Record<string, string>>) => (event.metadata['actor'] === params['actor'] ? { count: state.count + 1 } : state),
    rows: (state: { count: number }, params: Readonly<Record<string, string>>) => [{ actor: params['actor']!, [params['label']!]: state.count }],
  };

  it('given --param values, then the fold and the rows see them, defaults fill the rest, and the checkpoint keeps them', async () => {
    const scenario = twoActors();
    await appendAll(scenario.history.events);
    const actors = [...new Set(scenario.history.events.filter((event) => event.type === 'ExecutionAccepted').map((event) => String(event.metadata['actor'])))];
    expect(actors.length).toBe(2);
    const checkpointFile = join(dir, 'by-actor.checkpoint.json');
    const result = await runProjection({ projection: byActor, source: storeSource(store), params: { actor: actors[0]! }, checkpointFile });
    const expected = scenario.history.events.filter((event) => event.type === 'ExecutionAccepted' && event.metadata['actor'] === actors[0]).length;
    expect(result.rows).toEqual([{ actor: actors[0], accepted: expected }]);
    expect(JSON.parse(readFileSync(checkpointFile, 'utf8')).params).toEqual({ actor: actors[0], label: 'accepted' });
    // Resuming with other values would mix two folds: refused, naming both.
    await expect(runProjection({ projection: byActor, source: storeSource(store), params: { actor: actors[1]! }, checkpointFile })).rejects.toThrow(
      `its state was folded with actor=${actors[0]} label=accepted, not actor=${actors[1]} label=accepted; rebuild`,
    );
  });

  it('given a parameter the projection does not take, or none for a required one, then the run is refused saying which', async () => {
    await expect(runProjection({ projection: byActor, source: storeSource(store), params: { actr: 'agent:a' } })).rejects.toThrow(
      "projection accepted-by-actor takes no parameter 'actr'; it takes: actor (the actor, as agent:<name>), label (the label of the row)",
    );
    await expect(runProjection({ projection: byActor, source: storeSource(store) })).rejects.toThrow('projection accepted-by-actor needs --param actor=… (the actor, as agent:<name>)');
    await expect(runProjection({ projection: fingerprintIndex, source: storeSource(store), params: { actor: 'x' } })).rejects.toThrow("takes no parameter 'actor' (it takes none)");
  });

  it('given a state holding a Map, when it is checkpointed, then the run stops naming where the Map is, and no checkpoint of {} is written', async () => {
    await appendAll(twoActors().history.events);
    const withMap = {
      name: 'streams-in-a-map',
      description: 'a projection that keeps a Map',
      initialState: () => ({ byStream: new Map<string, number>() }),
      evolve: (state: { byStream: Map<string, number> }, event: RecordedEvent) => {
        state.byStream.set(event.streamId, (state.byStream.get(event.streamId) ?? 0) + 1);
        return state;
      },
      rows: () => [],
    };
    const checkpointFile = join(dir, 'map.checkpoint.json');
    await expect(runProjection({ projection: withMap, source: storeSource(store), checkpointFile })).rejects.toThrow(
      /projection streams-in-a-map: its state after global position \d+ cannot be checkpointed: state\.byStream is a Map, which JSON cannot hold \(it would be checkpointed as \{\}\): use a plain object keyed by string/,
    );
    expect(existsSync(checkpointFile)).toBe(false);
  });
});
