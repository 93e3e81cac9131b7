import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { singleToolContract, type ToolContract } from '@oncegate/contracts';
import { SshDispatcher } from '@oncegate/channel-ssh';
import { executionIdFromUlid, executionStream, type ExecutionCommand, type ExecutionId } from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
import { isoNow, loadExecution, newUlid, runExecutionCommand, systemClock } from '@oncegate/execution-journal';
import { investigate } from '@oncegate/projections';
import { SqliteSealedStore } from '@oncegate/sealed-store';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-sshd harness
import { startSshd, type SshdHandle } from '../../../test/support/sshd';
import { formatReview } from './cli/commands/review-commands';
import { toolResult } from '@oncegate/service-gateway';
import { initVault, storeCredential, type VaultContext } from '@oncegate/vault';
import { VaultService } from '@oncegate/host-vault';
import { sshDispatcher } from '@oncegate/service-dispatcher-ssh';

const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the SSH dispatcher tests' };

/**
 * The SSH dispatcher in the gateway, against a real sshd, a real SQLite journal and the vault: what the journal,
 * `investigate`, `review show` and the agent's answer say when the host is not the pinned one, when the marker
 * cannot be read, when the outcome comes from the marker, and when a late attempt meets the claim.
 */
describe('dispatcher-ssh against a real sshd (SQLite journal, vault)', () => {
  let sshd: SshdHandle;
  let dataDir: string;
  let store: SqliteEventStore;
  let sealed: SqliteSealedStore;
  let vault: VaultService;
  let ssh: SshDispatcher;
  let counter = 0;
  const markers = () => join(sshd.workDir, 'markers');

  beforeAll(async () => {
    sshd = await startSshd({ delayableExec: true });
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oncegate-dispatch-ssh-'));
    store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
    sealed = new SqliteSealedStore({ file: join(dataDir, 'sealed.db'), current: { id: 'seal-test', key: randomBytes(32) } });
    const context: VaultContext = { store, dataDir, env: MASTER, by: 'operator:test' };
    await initVault(context);
    await storeCredential(context, { ref: 'deploy-key', kind: 'ssh_key', bindings: [`127.0.0.1:${sshd.port}`] }, sshd.clientPrivateKey);
    vault = new VaultService({ store, dataDir, env: MASTER });
    await vault.start();
    ssh = new SshDispatcher({ probeIntervalMs: 50 });
    counter += 1;
  });

  afterEach(async () => {
    await ssh.close();
    await vault.stop();
    await sealed.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const effectFile = () => join(sshd.workDir, `effects-${counter}`);
  const effects = () => (existsSync(effectFile()) ? readFileSync(effectFile(), 'utf8').split('\n').filter(Boolean).length : 0);

  /** A migration step on the test host: appends a line to the effect file, prints what it did. */
  function migration(options: { hostKey?: string; script?: string; startedWait?: string } = {}): ToolContract {
    const ssh = {
      host: '127.0.0.1',
      port: sshd.port,
      user: sshd.user,
      host_key: options.hostKey ?? sshd.hostKey,
      argv: ['/bin/sh', '-c', options.script ?? `echo ran >> ${effectFile()}; echo migrated`],
    };
    return singleToolContract(
      { name: 'run_migration', description: 'Run a migration step on the host.', channel: 'ssh', target: 'test/db-migrations' },
      `class: remote_command
credential_ref: deploy-key
input_schema: { type: object, properties: {}, additionalProperties: false }
ssh: ${JSON.stringify(ssh)}
marker: ${JSON.stringify({ directory: markers(), written_before_work: true, started_wait: options.startedWait ?? '300ms' })}
limits: { connect_timeout: 2s, response_timeout: 10s }`,
    );
  }

  const controllerFor = (tool: ToolContract) =>
    sshDispatcher({ store, tools: new Map([[tool.name, tool]]), sealed, ssh, vault, dispatcherId: 'dispatcher-ssh@test', clock: systemClock });

  const append = (executionId: ExecutionId, command: (now: ReturnType<typeof isoNow>) => ExecutionCommand) =>
    runExecutionCommand(store, executionId, () => command(isoNow(systemClock)), { actor: 'agent:test' }, systemClock);

  /** Accepts and authorizes one call of `tool`; returns its id and its `ExecutionAuthorized`. */
  async function authorized(tool: ToolContract): Promise<{ executionId: ExecutionId; event: RecordedEvent }> {
    const executionId = executionIdFromUlid(newUlid());
    const argumentsRef = (await sealed.seal('arguments', executionId, Buffer.from('{}'))).ref;
    await append(executionId, (now) => ({
      type: 'AcceptExecution',
      executionId,
      now,
      record: { actor: 'agent:test', tool: tool.name, channel: 'ssh', target: tool.target, credential_ref: 'deploy-key', arguments: {}, intent_scope: 'actor' } as never,
      fingerprint: `hmac-sha256:k1:${randomBytes(32).toString('hex')}` as never,
      operationClass: 'remote_command',
      intentScope: { kind: 'actor' },
      correlationWindowMs: 300_000,
      redeliveryGraceMs: 0,
      attemptPolicy: { maxAttempts: 3, attemptTimeoutMs: 30_000, markerBeforeWork: true },
      correlation: { jsonRpcId: 1, transport: 'streamable-http' },
      argumentsRef,
    }));
    await append(executionId, (now) => ({ type: 'AuthorizeExecution', executionId, now, basis: 'policy' }));
    return { executionId, event: await lastOf(executionId, 'ExecutionAuthorized') };
  }

  const eventsOf = (executionId: ExecutionId) => store.readStream(executionStream(executionId));
  async function lastOf(executionId: ExecutionId, type: string): Promise<RecordedEvent> {
    const found = (await eventsOf(executionId)).findLast((event) => event.type === type);
    if (found === undefined) throw new Error(`no ${type} in ${executionId}`);
    return found;
  }
  async function investigation(executionId: ExecutionId) {
    return investigate((await store.readAll({ after: 0, maxCount: 10_000 })).events, { executionId });
  }

  it('given a host whose key is not the pinned one, when dispatched, then the journal records the attempt as not sent with the mismatch, and investigate says nothing came back', async () => {
    const tool = migration({ hostKey: sshd.otherHostKey });
    const controller = controllerFor(tool);
    const { executionId, event } = await authorized(tool);

    await controller.onAuthorized(event);
    await controller.drain();

    const outcome = await lastOf(executionId, 'OutcomeObserved');
    expect(outcome.data).toMatchObject({ outcome: 'failed', source: 'not_sent', notSentReason: expect.stringMatching(/^host key mismatch: /) });
    const answers = (await investigation(executionId)).answers;
    expect(answers.outcome.facts.executions[0]!.kind).toBe('not_sent');
    expect(answers.outcome.summary).toMatch(/^no: attempt 1: not sent, nothing reached the target \(host key mismatch: /);
    expect(answers.firstCall.summary).toMatch(/but nothing left the gateway: host key mismatch: /);
    expect(effects()).toBe(0);
  });

  it('given the host presents another key when the marker is probed, then the probe is recorded as failed with the mismatch, the review says so, and review show and investigate name it', async () => {
    const tool = migration({ hostKey: sshd.otherHostKey });
    const controller = controllerFor(tool);
    const { executionId } = await authorized(tool);
    // The exec request left and the connection was lost: from here on only the marker can tell.
    await append(executionId, (now) => ({ type: 'RecordDispatch', executionId, now, dispatcherId: 'dispatcher-ssh@test' }));
    await append(executionId, (now) => ({ type: 'RecordUnknownOutcome', executionId, now, attempt: 1, reason: 'ssh_connection_dropped' }));

    await controller.onOutcomeUnknown(await lastOf(executionId, 'OutcomeUnknown'));

    const probed = await lastOf(executionId, 'MarkerProbed');
    expect(probed.data).toMatchObject({ attempt: 1, marker: 'probe_failed', failure: expect.stringMatching(/^host key mismatch: /) });
    expect((await lastOf(executionId, 'ReviewRequired')).data).toMatchObject({ reason: 'marker_probe_failed' });
    const shown = formatReview(await loadExecution(store, executionId));
    expect(shown).toMatch(/"reviewReason": "marker_probe_failed"/);
    expect(shown).toMatch(/MarkerProbed .* attempt 1: marker probe failed: host key mismatch: /);
    expect((await investigation(executionId)).answers.outcome.summary).toMatch(
      /^no: attempt 1: outcome unknown \(ssh_connection_dropped\).*; marker probe failed: host key mismatch: .*; review marker_probe_failed pending$/,
    );
    const { state } = await loadExecution(store, executionId);
    const answer = toolResult(tool.name, state, { attached: true, replayed: false }, undefined);
    expect(answer.content[0]!.type === 'text' && answer.content[0]!.text).toMatch(/Held for review \(marker_probe_failed\).* The marker on the host could not be read: host key mismatch: /);
  });

  it('given the connection is lost while the command runs, when the marker shows it completed, then the outcome comes from the marker and the answer says where its output is on the host', async () => {
    const tool = migration({ script: `sleep 1; echo ran >> ${effectFile()}; echo migrated`, startedWait: '5s' });
    const controller = controllerFor(tool);
    const { executionId, event } = await authorized(tool);

    await controller.onAuthorized(event);
    await eventuallyTrue(() => existsSync(join(markers(), `${executionId}.started`)));
    await sshd.killConnections();
    await controller.drain();
    await controller.onOutcomeUnknown(await lastOf(executionId, 'OutcomeUnknown'));

    expect((await lastOf(executionId, 'OutcomeObserved')).data).toMatchObject({ source: 'marker', outcome: 'succeeded', exitCode: 0, resultRef: null });
    const stdout = join(markers(), `${executionId}.1.stdout`);
    expect(readFileSync(stdout, 'utf8')).toBe('migrated\n');
    const { state } = await loadExecution(store, executionId);
    const answer = toolResult(tool.name, state, { attached: false, replayed: false }, undefined);
    const text = answer.content[0]!.type === 'text' ? answer.content[0]!.text : '';
    expect(text).toContain('run_migration completed (exit status 0).');
    expect(text).toContain('established from the durable marker on the host (written by attempt 1)');
    expect(text).toContain(`no output is included here; it is kept on the host ${sshd.user}@127.0.0.1:${sshd.port} at ${stdout}`);
    expect(answer.structuredContent).toMatchObject({
      execution: { outcomeSource: 'marker', hostOutput: { writtenBy: 1, kept: { host: `${sshd.user}@127.0.0.1:${sshd.port}`, paths: [stdout] } } },
    });
    expect(effects()).toBe(1);
  });

  it('given the host starts attempt 1 only after the probe said absent and attempt 2 ran, then attempt 1 refuses on the host: one effect, and journal and markers agree on attempt 2', async () => {
    const tool = migration();
    const controller = controllerFor(tool);
    const { executionId, event } = await authorized(tool);
    // Long enough that attempt 2 has claimed the execution before attempt 1 starts, even on a loaded machine: released
    // earlier, attempt 1 would run first and the case would test another order.
    await sshd.delayNextExec(8_000);

    await controller.onAuthorized(event);
    await sshd.whenExecDelayed();
    await sshd.killConnections();
    await controller.drain();
    await controller.onOutcomeUnknown(await lastOf(executionId, 'OutcomeUnknown'));
    expect((await lastOf(executionId, 'MarkerProbed')).data).toMatchObject({ marker: 'absent' });
    // The agent retries: with the marker absent and written before work, attempt 2 is sent.
    await append(executionId, (now) => ({ type: 'AttachRetry', executionId, now, correlation: { jsonRpcId: 2, transport: 'streamable-http' } }));
    await controller.onRetryAttached(await lastOf(executionId, 'RetryAttached'));
    await controller.drain();
    await sshd.whenDelayedExecReleased();
    // The held attempt 1 runs on sshd's own schedule once released: on a loaded machine that took more than 10 s.
    await eventuallyTrue(() => existsSync(join(markers(), `${executionId}.1.refused`)) || effects() > 1, 40_000);

    expect(effects()).toBe(1);
    expect((await lastOf(executionId, 'OutcomeObserved')).data).toMatchObject({ attempt: 2, source: 'response', outcome: 'succeeded' });
    expect((await eventsOf(executionId)).filter((e) => e.type === 'Dispatched')).toHaveLength(2);
    expect(readFileSync(join(markers(), `${executionId}.started`), 'utf8')).toBe('attempt=2\n');
    expect(readFileSync(join(markers(), `${executionId}.done`), 'utf8')).toBe('exit_status=0\nattempt=2\n');
  }, 60_000);

  it('given another attempt already holds the execution on the host, when an attempt is dispatched, then it is recorded as unknown (claimed by another attempt) and the outcome is read from that attempt’s marker', async () => {
    const tool = migration({ script: `sleep 1; echo ran >> ${effectFile()}; echo migrated`, startedWait: '5s' });
    const controller = controllerFor(tool);
    const { executionId } = await authorized(tool);
    // Attempt 1 was lost and held for review; an operator resolved it as not executed and the agent retried, so
    // attempt 2 is sent — while attempt 1 is in fact running on the host.
    await append(executionId, (now) => ({ type: 'RecordDispatch', executionId, now, dispatcherId: 'dispatcher-ssh@test' }));
    await append(executionId, (now) => ({ type: 'RecordUnknownOutcome', executionId, now, attempt: 1, reason: 'ssh_connection_dropped' }));
    await append(executionId, (now) => ({ type: 'RequireReview', executionId, now, reason: 'marker_started' }));
    await append(executionId, (now) => ({ type: 'ResolveReview', executionId, now, resolution: 'not_executed', by: 'operator:test', reason: 'looked wrong' }));
    await append(executionId, (now) => ({ type: 'AttachRetry', executionId, now, correlation: { jsonRpcId: 2 } }));
    const first = ssh.run({ executionId, attempt: 1, tool, arguments: {}, credential: { privateKey: sshd.clientPrivateKey } });
    await eventuallyTrue(() => existsSync(join(markers(), `${executionId}.started`)));

    await controller.onRetryAttached(await lastOf(executionId, 'RetryAttached'));
    await controller.drain();
    expect((await lastOf(executionId, 'OutcomeUnknown')).data).toMatchObject({ attempt: 2, reason: 'claimed_by_another_attempt' });
    await first;
    await controller.onOutcomeUnknown(await lastOf(executionId, 'OutcomeUnknown'));

    expect((await lastOf(executionId, 'MarkerProbed')).data).toMatchObject({ attempt: 2, marker: 'completed', exitStatus: 0, markerAttempt: 1 });
    expect((await lastOf(executionId, 'OutcomeObserved')).data).toMatchObject({ source: 'marker', outcome: 'succeeded' });
    expect(effects()).toBe(1);
  });
});

async function eventuallyTrue(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
