import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the demo target the gateway of the test calls
import { startDemoTarget, type DemoTarget } from '@oncegate/demo-target';
import { channelNotices } from '@oncegate/dispatcher-kit/host';
import { STORED_EVENT_TYPES, isStoredEventType, storedEventType, type ExecutionAccepted, type ExecutionCommand } from '@oncegate/domain';
import * as fixtures from '@oncegate/domain/testing';
import { readAllFrom, type EventStore, type RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { newUlid, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { loadGatewayConfig } from '@oncegate/host-config';
import { endRun } from '@oncegate/host-decisions';
import { AgentDirectory, ApproverDirectory } from '@oncegate/host-principals';
import { EventStoreTransport, requestReplay } from '@oncegate/nest-event-store';
import { initVault, lockVault, removeCredential, storeCredential, unlockVault, type VaultContext } from '@oncegate/vault';
/* eslint-disable @nx/enforce-module-boundaries -- the schemas are checked against a real gateway's journal, made with the e2e harness */
import { startGateway } from '../../apps/oncegate/src/gateway';
import { CREDENTIAL_CANARY, gatewayFolder, type GatewayFolder } from '../../test/support/gateway-process';
import { eventually } from '../../test/support/journal';
import { connectClient } from '../../test/support/mcp-clients';
/* eslint-enable @nx/enforce-module-boundaries */
import { differingFiles, EVENT_DATA_SOURCES, eventSchemaFiles, generateEventSchemas, OUTPUT_DIR, ROOT, schemaFileName, schemaId } from './generate';

const SCHEMA_DIR = join(ROOT, OUTPUT_DIR);

function committedSchema(type: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMA_DIR, schemaFileName(type)), 'utf8')) as Record<string, unknown>;
}

/**
 * The schema with every object that lists its properties closed (`additionalProperties: false`): what the code
 * writes must carry no field its type does not declare. Objects that say how they treat other fields keep it.
 */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const copy = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, closed(value)]));
  if ('properties' in copy && !('additionalProperties' in copy)) copy['additionalProperties'] = false;
  return copy;
}

function validators(transform: (schema: unknown) => unknown = (schema) => schema): Map<string, ValidateFunction> {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  return new Map(STORED_EVENT_TYPES.map((stored) => [stored.type, ajv.compile(transform(committedSchema(stored.type)) as object)]));
}

function problemsOf(validate: ValidateFunction, data: unknown): string[] {
  return validate(data) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
}

describe('event schemas in docs/events', () => {
  it('given STORED_EVENT_TYPES, then each type has a schema file with its id, and every event schema file is of a stored type', () => {
    const expected = STORED_EVENT_TYPES.map((stored) => schemaFileName(stored.type)).sort();
    expect(eventSchemaFiles(SCHEMA_DIR)).toEqual(expected);
    for (const stored of STORED_EVENT_TYPES) {
      expect(committedSchema(stored.type), stored.type).toMatchObject({ $id: schemaId(stored), title: `${stored.type} data` });
    }
    expect(Object.keys(EVENT_DATA_SOURCES).sort()).toEqual(STORED_EVENT_TYPES.map((stored) => stored.type).sort());
    expect(new Set(STORED_EVENT_TYPES.map((stored) => stored.type)).size).toBe(STORED_EVENT_TYPES.length);
  });

  it('given the TypeScript types as they are now, when the schemas are generated again, then they are exactly the committed files', { timeout: 60_000 }, () => {
    const generated = generateEventSchemas();
    expect(differingFiles(generated, SCHEMA_DIR), 'run npm run events:schemas').toEqual([]);
  });

  it('given a schema, when a required field is missing or a value is outside its enum, then the data is refused; optional fields and nulls pass', () => {
    const validate = validators();
    const accepted = (fixtures.historyOf(fixtures.acceptExecution())[0] as ExecutionAccepted).data;
    const check = validate.get('ExecutionAccepted')!;
    expect(problemsOf(check, accepted)).toEqual([]);
    const { fingerprint: _fingerprint, ...withoutFingerprint } = accepted;
    expect(check(withoutFingerprint)).toBe(false);
    expect(check.errors?.[0]).toMatchObject({ keyword: 'required', params: { missingProperty: 'fingerprint' } });
    expect(check({ ...accepted, operationClass: 'sometimes' })).toBe(false);
    expect(check({ ...accepted, intentScope: { kind: 'key', key: 'k' } })).toBe(false);
    expect(check({ ...accepted, windowEndsAt: 7 })).toBe(false);
    const { runId: _runId, ...withoutRun } = { ...accepted, runId: null };
    expect(problemsOf(check, withoutRun)).toEqual([]);
    expect(problemsOf(check, { ...accepted, runId: null, windowEndsAt: null, record: { ...accepted.record, credential_ref: null } })).toEqual([]);
    expect(validate.get('RunStarted')!({ runId: 'r', actor: 'agent:a', source: 'guessed', startedAt: fixtures.T0 })).toBe(false);
  });
});

const TOOL_RULES = ['', '  rules:', '    - { tools: [set_config], actors: [agent:dev], decision: run_grant }', "    - { tools: ['*'], actors: ['*'], decision: allow }"].join('\n');

/** Every event of a journal recorded by the gateway and the operator's commands, as a second reader sees it. */
async function readEverything(store: EventStore): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for await (const event of readAllFrom(store, { pageSize: 1000 })) events.push(event);
  return events;
}

/**
 * Executions through the states the in-process gateway does not reach in a short run (an outcome lost and recovered,
 * a review, a failed delivery, cancellations, expiry), decided and appended by the execution journal as the services
 * would, each under its own execution id.
 */
const HISTORIES: readonly (readonly ExecutionCommand[])[] = [
  [...fixtures.unknown('conditional_write'), fixtures.statusQuery(true)],
  [
    ...fixtures.unknown('remote_command', {
      record: { actor: 'agent:a', tool: 'migrate', channel: 'ssh', target: 'db1', credential_ref: 'deploy-key', arguments: {}, intent_scope: 'run:5f8097' },
    }),
    { ...fixtures.markerProbe('completed', 0), markerAttempt: 1, keptOutput: { host: 'deploy@db1:22', paths: ['/var/tmp/oncegate/out'] } },
  ],
  [...fixtures.unknown('remote_command'), { ...fixtures.markerProbe('probe_failed'), failure: 'host key mismatch' }],
  [...fixtures.unknown('irreversible'), fixtures.requireReview(), fixtures.resolveReview('completed')],
  [...fixtures.completed(), fixtures.deliveryFailed(), fixtures.delivered(fixtures.at(1_000))],
  [...fixtures.authorized(), fixtures.cancel()],
  [...fixtures.dispatched(), fixtures.requestCancellation()],
  [...fixtures.dispatched(), fixtures.progressed(2, { total: 4, message: 'copying' }), fixtures.observe()],
  [...fixtures.dispatched({ operationClass: 'irreversible' }), fixtures.taskStarted(), fixtures.unknownOutcome(), fixtures.observe({ source: 'task', targetStatus: null, now: fixtures.at(700) })],
  [...fixtures.dispatched({ operationClass: 'irreversible' }), fixtures.taskStarted(), fixtures.unknownOutcome(), fixtures.taskCheck('lost'), fixtures.requireReview()],
  [...fixtures.accepted({ runId: 'agent:a/r1' }), fixtures.requestApproval({ scope: 'run', expiresAt: fixtures.at(60_000) }), fixtures.expire()],
];

describe('event schemas against a real journal (in-process gateway and demo target, SQLite journal, official client)', () => {
  let target: DemoTarget;
  let folder: GatewayFolder;
  let events: RecordedEvent[];

  beforeAll(async () => {
    target = await startDemoTarget({ port: 0 });
    folder = await gatewayFolder(target.url, { call_wait: '500ms', seal_every: '1s', authorization: TOOL_RULES }, [], { vault: false });
    mkdirSync(folder.dataDir, { recursive: true });
    const targetHost = new URL(target.url).host;

    // The vault as `oncegate vault init --dev` and `vault set` make it, with a second credential to remove later.
    let store = openSqliteEventStore({ file: join(folder.dataDir, 'events.db') });
    const vault = (): VaultContext => ({ store, dataDir: folder.dataDir, env: {}, by: 'operator:cli' });
    await initVault(vault(), { dev: true });
    await storeCredential(vault(), { ref: 'demo-writer', kind: 'bearer', bindings: [targetHost] }, CREDENTIAL_CANARY);
    await storeCredential(vault(), { ref: 'spare', kind: 'header', header: 'X-Api-Key', bindings: [`${targetHost}/config`] }, 'spare-value-1');
    await store.close();

    const gateway = await startGateway(loadGatewayConfig({ file: folder.configFile }), { logLevels: ['error'] });
    try {
      const approvers = new ApproverDirectory(gateway.store);
      const { token: approver } = await approvers.issue('alice');
      const decideApproval = async (executionId: string, decision: 'approve' | 'deny', reason: string) => {
        const response = await fetch(new URL(`/approvals/${executionId}/${decision}`, gateway.url), {
          method: 'POST',
          headers: { authorization: `Bearer ${approver}`, 'content-type': 'application/json' },
          body: JSON.stringify({ reason }),
        });
        expect(response.status, await response.clone().text()).toBe(200);
      };
      const untilEvent = (type: string, executionId: string) =>
        eventually(async () => {
          const recorded = await gateway.store.readStream(`execution-${executionId}`);
          return recorded.some((event) => event.type === type) ? recorded : undefined;
        }, 10_000, `${type} on ${executionId}`);
      const idOf = (result: unknown) => (result as { structuredContent: { execution: { id: string } } }).structuredContent.execution.id;
      const inRun = (run: string, more: Record<string, string> = {}) => ({ 'io.oncegate/run': run, ...more });

      const { client, transport } = await connectClient(gateway.url, gateway.devToken!);
      // A read without credential, in the session's own run.
      await untilEvent('OutcomeObserved', idOf(await client.callTool({ name: 'get_build', arguments: { build_id: '7' } })));
      // A write that needs a run grant: granted over the approvals API, then repeated (attached) and keyed.
      const granted = idOf(await client.callTool({ name: 'set_config', arguments: { name: 'schema.a', value: '1' }, _meta: inRun('run-a') }));
      await untilEvent('ApprovalRequested', granted);
      await decideApproval(granted, 'approve', 'schema check');
      await untilEvent('OutcomeObserved', granted);
      await client.callTool({ name: 'set_config', arguments: { name: 'schema.a', value: '1' }, _meta: inRun('run-a') });
      const keyed = idOf(
        await client.callTool({ name: 'set_config', arguments: { name: 'schema.b', value: '2' }, _meta: inRun('run-a', { 'io.oncegate/idempotency-key': 'schema-key-1' }) }),
      );
      await untilEvent('OutcomeObserved', keyed);
      // A write in another run, denied.
      const denied = idOf(await client.callTool({ name: 'set_config', arguments: { name: 'schema.c', value: '3' }, _meta: inRun('run-b') }));
      await untilEvent('ApprovalRequested', denied);
      await decideApproval(denied, 'deny', 'not in this run');
      await untilEvent('ExecutionDenied', denied);
      // One more request on the session proves the earlier responses arrived; then the client ends the session.
      await client.listTools();
      await eventually(async () => ((await gateway.store.readStream(`execution-${keyed}`)).some((event) => event.type === 'ResultDelivered') ? true : undefined), 10_000, 'a delivery');
      await transport.terminateSession();
      await client.close();
      await approvers.revoke('alice');
    } finally {
      // Stopping seals what is there.
      await gateway.close();
    }

    store = openSqliteEventStore({ file: join(folder.dataDir, 'events.db') });
    try {
      // Operator commands: agent tokens, an approver's signing key, ending a run, the vault locked, unlocked and a credential removed.
      const agents = new AgentDirectory(store);
      await agents.issue('schema-bot');
      await agents.revoke('schema-bot');
      const approverKeys = new ApproverDirectory(store);
      await approverKeys.addKey('alice', generateKeyPairSync('ed25519').publicKey);
      await approverKeys.revokeKeys('alice');
      await endRun(store, 'agent:dev/run-a', 'operator:cli', 'schema check done', systemClock);
      await lockVault(vault(), 'schema check');
      await unlockVault(vault());
      await removeCredential(vault(), 'spare');

      for (const history of HISTORIES) {
        const executionId = `ex_${newUlid()}` as const;
        for (const command of history) {
          await runExecutionCommand(store, executionId, () => ({ ...command, executionId }), { actor: 'agent:a', causationId: null, correlation: { jsonRpcId: 1 } }, systemClock);
        }
      }

      // What a channel noticed about its target.
      const notices = channelNotices(store, systemClock, 'mcp', 'dispatcher-mcp@schema-check');
      notices.notice({ kind: 'upstream_tools_changed', message: 'upstream ledger lists 3 tools', details: { upstream: 'ledger', added: [], removed: ['read_balance'], changed: [], held: [] } });
      await notices.flushed();

      // A consumer that keeps failing on an event parks it; a replay that fails again, then one that succeeds.
      let fault: string | undefined = 'the schema check consumer cannot reach its dependency';
      const consumer = new EventStoreTransport({ store, consumer: 'schema-check', streamPrefixes: ['session-'], attempts: 2, fault: () => fault });
      consumer.addHandler('SessionClosed', async () => undefined, true);
      await new Promise<void>((resolve) => consumer.listen(resolve));
      try {
        const parkedOf = async () => (await store.readStream('parked-schema-check')).map((event) => event.type);
        await eventually(async () => ((await parkedOf()).includes('EventParked') ? true : undefined), 10_000, 'a parked event');
        await requestReplay(store, 'schema-check', 'all', 'operator:cli');
        await eventually(async () => ((await parkedOf()).includes('ParkedReplayFailed') ? true : undefined), 10_000, 'a failed replay');
        fault = undefined;
        await requestReplay(store, 'schema-check', 'all', 'operator:cli');
        await eventually(async () => ((await parkedOf()).includes('ParkedEventHandled') ? true : undefined), 10_000, 'a handled replay');
      } finally {
        await consumer.close();
      }
      events = await readEverything(store);
    } finally {
      await store.close();
    }
  }, 120_000);

  afterAll(async () => {
    await target?.close();
    folder?.dispose();
  });

  it('given the journal, then it holds an event of every stored type', () => {
    const recorded = new Set(events.map((event) => event.type));
    expect(STORED_EVENT_TYPES.map((stored) => stored.type).filter((type) => !recorded.has(type))).toEqual([]);
  });

  it('given every event of the journal, then its type is a stored type, on a stream of its category, at its schema version', () => {
    const wrong = events.flatMap((event) => {
      if (!isStoredEventType(event.type)) return [`${event.type} on ${event.streamId} is not in STORED_EVENT_TYPES`];
      const stored = storedEventType(event.type)!;
      const category = event.streamId.slice(0, event.streamId.indexOf('-'));
      return [
        ...(category === stored.category ? [] : [`${event.type} on ${event.streamId}: category ${stored.category} expected`]),
        ...(event.metadata['schemaVersion'] === stored.schemaVersion ? [] : [`${event.type} on ${event.streamId}: schemaVersion ${String(event.metadata['schemaVersion'])}`]),
      ];
    });
    expect(wrong).toEqual([]);
  });

  it('given every event of the journal, then its data is valid against the schema of its type', () => {
    const validate = validators();
    const invalid = events.flatMap((event) => problemsOf(validate.get(event.type)!, event.data).map((problem) => `${event.type} ${event.streamId}@${event.revision}: ${problem}`));
    expect(invalid).toEqual([]);
  });

  it('given every event of the journal, then its data carries no field its type does not declare', () => {
    const validate = validators(closed);
    const undeclared = events.flatMap((event) => problemsOf(validate.get(event.type)!, event.data).map((problem) => `${event.type} ${event.streamId}@${event.revision}: ${problem}`));
    expect(undeclared).toEqual([]);
  });

  it('given a recorded event, when a required field is taken out, then its schema refuses it', () => {
    const validate = validators();
    const refused = STORED_EVENT_TYPES.flatMap((stored) => {
      const schema = committedSchema(stored.type) as { required?: string[] };
      const event = events.find((candidate) => candidate.type === stored.type)!;
      return (schema.required ?? []).flatMap((field) => {
        const { [field]: _dropped, ...rest } = event.data as Record<string, unknown>;
        return validate.get(stored.type)!(rest) ? [`${stored.type} without ${field}`] : [];
      });
    });
    expect(refused).toEqual([]);
  });
});
