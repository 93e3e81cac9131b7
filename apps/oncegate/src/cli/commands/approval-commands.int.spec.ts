import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { newUlid, systemClock } from '@oncegate/execution-journal';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the CLI runs as its own process, as the end-to-end suites run it
import { oncegate, type GatewayFolder } from '../../../../../test/support/gateway-process';
import { runCliHere } from '../testing/cli-in-process';
import { ApproverDirectory } from '@oncegate/host-principals';
import { approvalToolsYaml, CARD_TOKEN_HMAC, deniedOnTimeout, paymentAwaitingApproval, retryAttached } from '@oncegate/host-decisions/testing';
import type { ApprovalView, PendingApproval } from '@oncegate/host-decisions';

const TARGET = 'https://payments.example';

describe('oncegate approvals and approvers (the real CLI process on a SQLite data folder)', () => {
  let folder: GatewayFolder;
  let store: EventStore;
  const run = (...args: string[]) => oncegate(folder, args);
  /**
   * The same command through the CLI's entry in this process (runCliHere: the exit code and every byte of output, as
   * a process gives them), one run at a time: for the decisions and the refusals, whose subject is what the command
   * records and says. Listing, showing and the approvers' tokens keep the real process.
   */
  const here = (...args: string[]) => runCliHere([...args, '--config', folder.configFile]);
  const typesOf = async (id: ExecutionId) => (await store.readStream(executionStream(id))).map((event) => event.type);

  beforeAll(() => {
    // Only what these commands read: where the journal is, and the contracts for the target's details.
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-approvals-cli-'));
    const dataDir = join(dir, 'data');
    const configFile = join(dir, 'oncegate.yaml');
    writeFileSync(join(dir, 'tools.yaml'), approvalToolsYaml(TARGET));
    writeFileSync(configFile, `data_dir: ${dataDir}\ncontracts: ${join(dir, 'tools.yaml')}\n`);
    mkdirSync(dataDir, { recursive: true });
    folder = { dir, dataDir, journal: dataDir, configFile, port: 0, url: '', dispose: () => rmSync(dir, { recursive: true, force: true }) };
    store = openSqliteEventStore({ file: join(folder.dataDir, 'events.db') });
  });

  afterAll(async () => {
    await store.close();
    folder.dispose();
  });

  it('given requests pending, decided and timed out, when listed and shown, then only the pending ones are listed, oldest first, and show tells everything', async () => {
    expect(await run('approvals', 'list')).toMatchObject({ code: 0, stdout: 'nothing is awaiting approval\n' });
    const first = await paymentAwaitingApproval(store, systemClock, { reference: 'pay-first-1' });
    const decided = await paymentAwaitingApproval(store, systemClock);
    const timedOut = await paymentAwaitingApproval(store, systemClock);
    const second = await paymentAwaitingApproval(store, systemClock, { scope: 'run' });
    await deniedOnTimeout(store, systemClock, timedOut);
    await retryAttached(store, systemClock, first, 2);
    expect((await run('approvals', 'deny', decided, '--reason', 'duplicate invoice')).code).toBe(0);

    const [text, json, shown, shownJson] = await Promise.all([
      run('approvals', 'list'),
      run('approvals', 'list', '--json'),
      run('approvals', 'show', first),
      run('approvals', 'show', first, '--json'),
    ]);

    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines.map((line) => line.split('\t')[0])).toEqual([first, second]);
    expect(lines[0]).toMatch(/\tsend_payment\tagent:billing-bot\texecution\trequested \S+ by policy:payments-over-limit\texpires never\tretries 1\tpayments over 1000.00 need a person$/);
    expect(lines[1]).toContain('\trun run-7f3a\t');
    expect(((JSON.parse(json.stdout) as PendingApproval[]).map((item) => item.executionId))).toEqual([first, second]);

    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`execution   ${first}   (awaiting_approval)\napproval    pending\n`);
    expect(shown.stdout).toContain(`target      demo/payments   POST ${TARGET}/payments\n`);
    expect(shown.stdout).toContain(`"card_token":"${CARD_TOKEN_HMAC}"`);
    expect(shown.stdout).toContain(`granting    Approving lets this one execution (${first}) proceed; nothing else is approved.\n`);
    expect(shown.stdout).toMatch(/calls {7}2 \(the first, and 1 attached retry; a retry never asks again\)\n {2}retry at \S+ {2}\{"jsonRpcId":2,/);
    const view = JSON.parse(shownJson.stdout) as ApprovalView;
    expect(view).toMatchObject({ executionId: first, tool: 'send_payment', target: { url: `${TARGET}/payments` } });
    expect(view.attachedCalls).toHaveLength(1);
  });

  it('given a pending request, when approved from the CLI, then one ApprovalGranted by operator:cli, and a second decision is refused naming it', async () => {
    const id = await paymentAwaitingApproval(store, systemClock);

    const approved = await here('approvals', 'approve', id, '--reason', 'invoice 4411 checked');
    expect(approved).toMatchObject({ code: 0, stdout: `${id} granted by operator:cli\n` });
    const events = await store.readStream(executionStream(id));
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalGranted']);
    expect(events[2]!.data).toMatchObject({ by: 'operator:cli', reason: 'invoice 4411 checked' });

    const again = await here('approvals', 'approve', id, '--reason', 'twice');
    const denied = await here('approvals', 'deny', id, '--reason', 'too late', '--by', 'user:bob');
    for (const refused of [again, denied]) {
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(new RegExp(`^execution ${id} is not awaiting approval: already granted by operator:cli at \\S+\\n$`));
    }
    expect(await typesOf(id)).toHaveLength(3);
  });

  it('given a request denied on timeout, when approved or denied with --by, then it is refused with the timeout; a pending one is denied by who --by names', async () => {
    const timedOut = await paymentAwaitingApproval(store, systemClock);
    await deniedOnTimeout(store, systemClock, timedOut);
    const open = await paymentAwaitingApproval(store, systemClock);

    const late = await here('approvals', 'approve', timedOut, '--reason', 'sorry');
    const denied = await here('approvals', 'deny', open, '--reason', 'card looks stolen', '--by', 'user:bob');

    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/is not awaiting approval: already denied: approval_timeout at \S+ \(nobody decided before the request expired\)\n$/);
    expect(await typesOf(timedOut)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ExecutionDenied']);
    expect(denied).toMatchObject({ code: 0, stdout: `${open} denied by user:bob\n` });
    expect((await store.readStream(executionStream(open)))[2]!.data).toMatchObject({ by: 'user:bob', reason: 'card looks stolen' });
  });

  it('given a missing reason, a bad or unknown execution id, when run, then usage errors exit 2 and an unknown execution exits 1', async () => {
    const id = await paymentAwaitingApproval(store, systemClock);
    const unknown = executionIdFromUlid(newUlid());
    const noReason = await here('approvals', 'approve', id);
    const badId = await here('approvals', 'deny', 'ex_nope', '--reason', 'x');
    const notFound = await here('approvals', 'approve', unknown, '--reason', 'ok');
    const notFoundShow = await here('approvals', 'show', unknown);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/^oncegate: approvals approve: required option '--reason <text>' not specified\nUsage: oncegate approvals approve /);
    expect(badId.code).toBe(2);
    expect(badId.stderr).toMatch(/^oncegate: approvals deny: command-argument value 'ex_nope' is invalid for argument 'execution-id'\. An execution id is ex_ followed by a ULID\.\n/);
    expect(notFound).toMatchObject({ code: 1, stderr: `no execution ${unknown} in this journal\n` });
    expect(notFoundShow).toMatchObject({ code: 1, stderr: `no execution ${unknown} in this journal\n` });
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);
  });

  it('given approvers added, listed and revoked, when the journal is read, then the token was printed once and is in no event', async () => {
    const added = await run('approvers', 'add', 'alice');
    expect(added.code).toBe(0);
    const token = added.stdout.trim();
    expect(token).toMatch(/^oga_[A-Za-z0-9_-]{43}$/);
    expect(added.stderr).toMatch(/^issued a token for approver:alice \(token id \S+\); it is not shown again\n$/);

    const listed = await run('approvers', 'list');
    expect(listed.stdout).toMatch(/^approver:alice\t\S+\tissued \S+\tactive\n$/);
    expect(listed.stdout).not.toContain(token);
    expect(await run('approvers', 'revoke', 'alice')).toMatchObject({ code: 0, stdout: 'revoked 1 token of approver:alice\n' });
    expect(await run('approvers', 'revoke', 'alice')).toMatchObject({ code: 1, stdout: 'approver:alice has no active token\n' });
    expect((await run('approvers', 'list')).stdout).toMatch(/\trevoked \S+\n$/);
    expect((await run('approvers', 'add', 'Bad Name')).stderr).toMatch(/'Bad Name' is not a valid approver name/);
    expect((await run('agents', 'list')).stdout).toBe('no agents yet; add one with: oncegate agents add <name>\n');

    const bytes = readdirSync(folder.dataDir)
      .filter((file) => file.startsWith('events.db'))
      .map((file) => readFileSync(join(folder.dataDir, file)).toString('latin1'))
      .join('');
    expect(bytes).toContain('ApproverTokenIssued');
    expect(bytes).not.toContain(token);
  });

  it('given a token made elsewhere (a deployment Secret), when registered with --token-from-env, then it authenticates that approver, is printed nowhere, and registering it again changes nothing', async () => {
    const given = `oga_${'Zq9_'.repeat(10)}abc`;
    const env = { BOOTSTRAP_TOKEN: given };
    const registered = await oncegate(folder, ['approvers', 'add', 'carol', '--token-from-env', 'BOOTSTRAP_TOKEN'], env);
    expect(registered).toMatchObject({ code: 0, stdout: '' });
    expect(registered.stderr).toMatch(/^registered the token from BOOTSTRAP_TOKEN for approver:carol \(token id \S+\)\n$/);
    const again = await oncegate(folder, ['approvers', 'add', 'carol', '--token-from-env', 'BOOTSTRAP_TOKEN'], env);
    expect(again).toMatchObject({ code: 0, stdout: '' });
    expect(again.stderr).toMatch(/^approver:carol already holds this token/);
    expect((await run('approvers', 'list')).stdout.split('\n').filter((line) => line.startsWith('approver:carol\t'))).toHaveLength(1);
    const store = openSqliteEventStore({ file: join(folder.dataDir, 'events.db') });
    try {
      expect(await new ApproverDirectory(store).authenticate(given)).toBe('approver:carol');
    } finally {
      await store.close();
    }
    const malformed = await oncegate(folder, ['approvers', 'add', 'dave', '--token-from-env', 'BOOTSTRAP_TOKEN'], { BOOTSTRAP_TOKEN: 'oga_short-and-secret' });
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/not a valid approver token: it must be oga_ followed by 43 characters/);
    expect(malformed.stderr).not.toContain('short-and-secret');
    expect((await oncegate(folder, ['approvers', 'add', 'dave', '--token-from-env', 'NOT_SET_ANYWHERE'])).stderr).toMatch(/--token-from-env: NOT_SET_ANYWHERE is not set/);
    for (const output of [registered, again]) expect(`${output.stdout}${output.stderr}`).not.toContain(given);
  });
});
