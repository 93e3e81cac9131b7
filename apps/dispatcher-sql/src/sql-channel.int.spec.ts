import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkContractFile } from '@oncegate/contracts';
import { hostingOf } from '@oncegate/dispatcher-kit/host';
import { DispatcherWorld } from '@oncegate/dispatcher-kit/host-testing';
import { IDEMPOTENCY_TABLE, sqlKit } from './sql-channel';
import { openShopDatabase, shopConnection, type ShopDatabase } from './testing/shop-database';
import { shopContract } from './testing/shop-tools';

/**
 * The SQL channel on a real PostgreSQL server: values arrive as parameters whatever they hold; the database itself
 * recognises an execution sent again; a statement that fails or times out before COMMIT changed nothing.
 */
describe('the SQL channel against a real PostgreSQL 15', () => {
  let shop: ShopDatabase;
  let world: DispatcherWorld;

  beforeAll(async () => {
    shop = await openShopDatabase();
    world = await DispatcherWorld.open({
      kit: sqlKit,
      contract: shopContract(shop, { prefix: '' }),
      credential: { ref: 'shop-db', kind: 'password', bindings: [`127.0.0.1:${shop.port}`], value: shop.password },
    });
  }, 120_000);

  afterAll(async () => {
    await world?.close();
    await shop?.stop();
  });

  const recorded = async (executionId: string) =>
    (await shop.query<{ attempt: number }>(`SELECT attempt FROM ${IDEMPOTENCY_TABLE} WHERE execution_id = $1`, [executionId])).rows;

  const HOSTILE = [
    ["a quote that closes the literal and drops a table", "x'); DROP TABLE payments; --"],
    ['a classic', "Robert'); DROP TABLE prices;--"],
    ['a tautology', '1 OR 1=1'],
    ['a placeholder', '$1'],
    ['a dollar quote', '$$; DELETE FROM payments; $$'],
    ['a template', '{{args.payee}}'],
    ['a backslash escape', "\\'; SELECT pg_sleep(10); --"],
    ['a second statement', '; TRUNCATE payments CASCADE'],
    ['a comment opener', '/* unclosed'],
    ['unicode', 'Zoë 💸 ‮dlrow'],
    ['a long value', 'A'.repeat(10_000)],
  ] as const;

  it.each(HOSTILE)('given %s as a value, then it is stored as it was given: a parameter, never SQL', async (_what, payee) => {
    const before = await shop.query<{ count: string }>('SELECT count(*) FROM payments');
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('irreversible', { payee, cents: 7 });
    await world.dispatch(executionId, dispatcher);

    expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ outcome: 'succeeded', source: 'response' });
    const rows = await shop.query<{ payee: string; cents: number }>('SELECT payee, cents FROM payments WHERE changed_by = $1', [executionId]);
    expect(rows.rows).toEqual([{ payee, cents: 7 }]);
    const after = await shop.query<{ count: string }>('SELECT count(*) FROM payments');
    expect(Number(after.rows[0]!.count)).toBe(Number(before.rows[0]!.count) + 1);
    expect((await shop.query('SELECT count(*) FROM prices')).rows[0]).toEqual({ count: '200' });
  });

  it('given a value PostgreSQL cannot hold (a NUL), then the failure is definite and nothing is written', async () => {
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('irreversible', { payee: 'nul\u0000byte', cents: 7 });
    await world.dispatch(executionId, dispatcher);

    expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ outcome: 'failed' });
    expect(await shop.effects(executionId)).toBe(0);
    expect(await recorded(executionId)).toEqual([]);
  });

  it('given the connection is lost after COMMIT and before its answer, when the agent retries, then the database recognises the execution id and the stored outcome is reported: no second change', async () => {
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('idempotent_write', { sku: 'sku-150', cents: 4242 });
    shop.proxy.loseNextAnswer('COMMIT\0');
    await world.dispatch(executionId, dispatcher);
    expect((await world.last(executionId, 'OutcomeUnknown'))!.data).toMatchObject({ attempt: 1, reason: 'connection_reset' });
    // Committed: the row changed and the execution id is recorded, though the dispatcher never heard it.
    expect(await shop.effects(executionId)).toBe(1);
    expect(await recorded(executionId)).toEqual([{ attempt: 1 }]);

    await world.retry(executionId);
    const state = await world.recover(executionId, dispatcher);

    expect(state.status).toBe('completed');
    expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 2, outcome: 'succeeded', source: 'response' });
    expect(JSON.parse((await world.resultBody(executionId))!)).toMatchObject({ command: 'UPDATE', rowCount: 1, recorded: { byAttempt: 1, note: 'this execution had already taken effect; it was not run again' } });
    expect(await shop.effects(executionId)).toBe(1);
    expect(await recorded(executionId)).toEqual([{ attempt: 1 }]);
    expect((await shop.query('SELECT cents FROM prices WHERE sku = $1', ['sku-150'])).rows).toEqual([{ cents: 4242 }]);
  });

  it('given a payment whose COMMIT answer was lost, then it is held for review; when an operator wrongly says it never happened, then the database still refuses a second payment', async () => {
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('irreversible', { payee: 'acme', cents: 990 });
    shop.proxy.loseNextAnswer('COMMIT\0');
    await world.dispatch(executionId, dispatcher);
    await world.retry(executionId);
    expect((await world.recover(executionId, dispatcher)).status).toBe('needs_review');
    expect((await world.events(executionId)).filter((event) => event.type === 'Dispatched')).toHaveLength(1);

    await world.resolveReview(executionId, 'not_executed', 'the payment list looked empty');
    expect((await world.recover(executionId, dispatcher)).status).toBe('not_executed');
    await world.retry(executionId);
    const state = await world.recover(executionId, dispatcher);

    expect(state.status).toBe('completed');
    expect((await world.events(executionId)).filter((event) => event.type === 'Dispatched')).toHaveLength(2);
    expect((await shop.query('SELECT payee, cents FROM payments WHERE changed_by = $1', [executionId])).rows).toEqual([{ payee: 'acme', cents: 990 }]);
    expect(await shop.effects(executionId)).toBe(1);
  });

  it('given a statement that outlasts its timeout (a row held by someone else), then it is cancelled and rolled back: a definite failure, nothing changed, nothing recorded', async () => {
    const holder = new pg.Client({ connectionString: shop.server.url(shop.database) });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT * FROM prices WHERE sku = 'sku-160' FOR UPDATE");
      const { dispatcher } = await world.dispatcher();
      const { executionId } = await world.call('idempotent_write', { sku: 'sku-160', cents: 1 });
      await world.dispatch(executionId, dispatcher);

      expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 1, outcome: 'failed', source: 'response' });
      expect(await world.resultBody(executionId)).toContain('the statement timed out (statement_timeout); rolled back, nothing changed');
      expect(await shop.effects(executionId)).toBe(0);
      expect(await recorded(executionId)).toEqual([]);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('given a one-row update that matches no row, then it is rolled back as a failure naming the count', async () => {
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('idempotent_write', { sku: 'no-such-sku', cents: 1 });
    await world.dispatch(executionId, dispatcher);

    expect((await world.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ outcome: 'failed' });
    expect(await world.resultBody(executionId)).toContain('expected 1 row affected, 0 were: rolled back, nothing changed');
    expect(await recorded(executionId)).toEqual([]);
  });

  it('given a tool whose tls_ca file cannot be read, then nothing is sent and the failure is definite, naming the file', async () => {
    const other = await DispatcherWorld.open({
      kit: sqlKit,
      contract: shopContract(shop, { prefix: '' }).replaceAll(`database: ${shop.database}, user: ${shop.user}`, `database: ${shop.database}, user: ${shop.user}, tls: verify-full, tls_ca: /nonexistent/oncegate-ca.pem`),
      credential: { ref: 'shop-db', kind: 'password', bindings: [`127.0.0.1:${shop.port}`], value: shop.password },
    });
    try {
      const { dispatcher } = await other.dispatcher();
      const { executionId } = await other.call('idempotent_write', { sku: 'sku-171', cents: 5 });
      await other.dispatch(executionId, dispatcher);
      expect((await other.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ attempt: 1, outcome: 'failed', source: 'not_sent' });
      expect((await other.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ notSentReason: expect.stringContaining('/nonexistent/oncegate-ca.pem') });
      expect(await shop.effects(executionId)).toBe(0);
    } finally {
      await other.close();
    }
  });

  it("given max_rows in the channel's options, then a longer result keeps that many rows and says how many there were", async () => {
    const listing = `version: 1
tools:
  - name: list_prices
    description: List the first prices.
    class: read_only
    channel: sql
    target: shop/prices
    credential_ref: shop-db
    input_schema: { type: object, additionalProperties: false }
    plugin: { ${shopConnection(shop)}, statement: "SELECT sku FROM prices ORDER BY sku LIMIT 10" }
    limits: { connect_timeout: 2s, response_timeout: 2s }
    correlation_window: 10m
`;
    const other = await DispatcherWorld.open({
      kit: sqlKit,
      contract: listing,
      credential: { ref: 'shop-db', kind: 'password', bindings: [`127.0.0.1:${shop.port}`], value: shop.password },
      options: { max_rows: 3 },
    });
    try {
      const { dispatcher } = await other.dispatcher();
      const { executionId } = await other.call('list_prices', {});
      await other.dispatch(executionId, dispatcher);

      expect((await other.last(executionId, 'OutcomeObserved'))!.data).toMatchObject({ outcome: 'succeeded', source: 'response' });
      const answer = JSON.parse((await other.resultBody(executionId))!) as { rows: unknown[]; rowCount: number; rowsCut?: number };
      expect(answer).toMatchObject({ rowCount: 10, rowsCut: 10 });
      expect(answer.rows).toHaveLength(3);
    } finally {
      await other.close();
    }
  });

  it("given a misspelt field in the channel's options, then the channel is not opened and the field is named with the nearest one", async () => {
    await expect(DispatcherWorld.open({ kit: sqlKit, contract: shopContract(shop, { prefix: '' }), options: { max_rowz: 3 } })).rejects.toThrow(
      "channels.sql.max_rowz: unknown field 'max_rowz'; did you mean 'max_rows'?",
    );
  });

  it('given the vault holds another kind of credential under the name, then the call is denied before anything is sent', async () => {
    const other = await DispatcherWorld.open({
      kit: sqlKit,
      contract: shopContract(shop, { prefix: '' }),
      credential: { ref: 'shop-db', kind: 'bearer', bindings: [`127.0.0.1:${shop.port}`], value: 'not-a-password-value' },
    });
    try {
      const { dispatcher } = await other.dispatcher();
      const { executionId } = await other.call('idempotent_write', { sku: 'sku-170', cents: 5 });
      await other.dispatch(executionId, dispatcher);
      expect((await other.events(executionId)).map((event) => event.type)).toEqual(['ExecutionAccepted', 'ExecutionAuthorized', 'ExecutionDenied']);
      expect((await other.last(executionId, 'ExecutionDenied'))!.data).toMatchObject({
        basis: 'credential_unresolved',
        reason: "credential 'shop-db' is a bearer credential; the sql channel takes password",
      });
      expect(await shop.effects(executionId)).toBe(0);
    } finally {
      await other.close();
    }
  });
});

describe('a SQL tool in the contract file, checked by the channel', () => {
  const checks = hostingOf(sqlKit).service.pluginChannels!;
  const at = shopConnection({ port: 5432 } as ShopDatabase);
  const contract = (operationClass: string, section: string) => `version: 1
tools:
  - name: broken
    description: A SQL tool with a mistake.
    class: ${operationClass}
    channel: sql
    target: shop/prices
    credential_ref: shop-db
    correlation_window: 10m
    input_schema: { type: object, properties: { sku: { type: string }, cents: { type: integer } }, additionalProperties: false }
    plugin:
      ${section.trim().split('\n').join('\n      ')}
`;
  const issues = (text: string) => {
    const result = checkContractFile(text, 'tools.yaml', { pluginChannels: checks });
    return result.ok ? [] : result.issues.map((issue) => `${issue.line}:${issue.column} ${issue.path}: ${issue.reason}`);
  };
  const base = at.split(', ').join('\n');

  it.each([
    ['a template spliced into the text', 'idempotent_write', `${base}\nstatement: "UPDATE prices SET cents = {{args.cents}}"`, "16:18 tools[0].plugin.statement: a template in the statement text would splice a value into SQL; write $1, $2, … and put the templates in parameters"],
    ['fewer parameters than placeholders', 'idempotent_write', `${base}\nstatement: "UPDATE prices SET cents = $1 WHERE sku = $2"\nparameters: ["{{args.cents}}"]`, '17:19 tools[0].plugin.parameters: the statement uses $1…$2 but 1 parameter is given'],
    ['a placeholder skipped', 'idempotent_write', `${base}\nstatement: "UPDATE prices SET cents = $2 WHERE sku = $2"\nparameters: ["{{args.cents}}", "{{args.sku}}"]`, '17:20 tools[0].plugin.parameters[0]: $1 is not used in the statement'],
    ['two statements', 'idempotent_write', `${base}\nstatement: "UPDATE prices SET cents = 1; DELETE FROM prices"`, '16:18 tools[0].plugin.statement: holds more than one statement; a tool runs exactly one'],
    ['transaction control', 'idempotent_write', `${base}\nstatement: "COMMIT"`, '16:18 tools[0].plugin.statement: COMMIT controls the transaction, which the SQL channel holds itself (its idempotency record commits with the statement)'],
    ['a misspelt field', 'idempotent_write', `${base}\nstatment: "UPDATE prices SET cents = 1"`, "16:17 tools[0].plugin.statment: unknown field 'statment'; did you mean 'statement'?"],
    ['a missing field', 'idempotent_write', `host: 127.0.0.1\nport: 5432\nuser: x\nstatement: "SELECT 1"`, "12:7 tools[0].plugin.database: missing required field 'database'"],
    ['a text in a parameter', 'idempotent_write', `${base}\nstatement: "UPDATE prices SET cents = 1 WHERE sku = $1"\nparameters: ["sku-{{args.sku}}"]`, '17:20 tools[0].plugin.parameters[0]: a parameter is a literal or exactly one template ({{args.<name>}} or {{execution.id}})'],
    ['a conditional write without a status query', 'conditional_write', `${base}\nstatement: "UPDATE prices SET cents = 1"`, "12:7 tools[0].plugin.status_query: a conditional_write needs a status_query: after an unknown outcome it decides whether the write may be sent again"],
    ['a status query that writes', 'conditional_write', `${base}\nstatement: "UPDATE prices SET cents = 1"\nstatus_query: { statement: "DELETE FROM prices", column: x, equals: 1 }`, '17:34 tools[0].plugin.status_query.statement: a status query reads: start it with SELECT (it starts with DELETE)'],
    ['TLS turned off for a server across the network', 'idempotent_write', `host: db.example.com\nport: 5432\ndatabase: shop\nuser: x\nstatement: "SELECT 1"\ntls: disable`, '17:12 tools[0].plugin.tls: the password would cross the network to db.example.com in clear; use require or verify-full'],
    ['a class the channel cannot recover', 'remote_command', `${base}\nstatement: "SELECT 1"`, '12:7 tools[0].plugin: channel sql recovers read_only, idempotent_write, conditional_write, irreversible calls; class remote_command is not one of them'],
  ])('given %s, then the check names the place and the reason', (_what, operationClass, section, expected) => {
    const found = issues(contract(operationClass, section));
    expect(found).toContain(expected);
  });

  it('given a correct section, then it passes', () => {
    expect(issues(contract('idempotent_write', `${base}\nstatement: "UPDATE prices SET cents = $1 WHERE sku = $2"\nparameters: ["{{args.cents}}", "{{args.sku}}"]\nexpect_rows: 1`))).toEqual([]);
  });
});
