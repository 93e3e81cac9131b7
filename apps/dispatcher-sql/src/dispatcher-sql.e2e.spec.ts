import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
/* eslint-disable @nx/enforce-module-boundaries -- the gateway, its processes and the PostgreSQL server are the shared e2e harness */
import { startService, type ServiceProcess } from '../../../deploy/local';
import { CREDENTIAL_CANARY, gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../../../test/support/gateway-process';
import { eventually, readJournal } from '../../../test/support/journal';
import { connectClient } from '../../../test/support/mcp-clients';
import { sharedPostgres, type SharedPostgres } from '../../../test/support/shared-servers';
/* eslint-enable @nx/enforce-module-boundaries */

const MAIN = join(import.meta.dirname, '../../../dist/apps/dispatcher-sql/main.js');

/** The SQL tools the gateway's contract file gains: nothing else of the gateway knows of the channel. */
function sqlTools(port: number, database: string, user: string): string {
  return `
  - name: set_price
    description: Set the price of a product in the shop's database.
    class: idempotent_write
    channel: sql
    target: shop/prices
    credential_ref: shop-db
    correlation_window: 10m
    input_schema: { type: object, properties: { sku: { type: string }, cents: { type: integer } }, required: [sku, cents], additionalProperties: false }
    plugin:
      host: 127.0.0.1
      port: ${port}
      database: ${database}
      user: ${user}
      statement: "UPDATE prices SET cents = $1, changed_by = $2 WHERE sku = $3"
      parameters: ["{{args.cents}}", "{{execution.id}}", "{{args.sku}}"]
      expect_rows: 1
    limits: { connect_timeout: 2s, response_timeout: 3s }
  - name: list_prices
    description: List the shop's prices.
    class: read_only
    channel: sql
    target: shop/prices
    credential_ref: shop-db
    correlation_window: 10m
    input_schema: { type: object, properties: {}, additionalProperties: false }
    plugin:
      host: 127.0.0.1
      port: ${port}
      database: ${database}
      user: ${user}
      statement: "SELECT sku, cents FROM prices ORDER BY sku"
    limits: { connect_timeout: 2s, response_timeout: 3s }
`;
}

/**
 * The SQL channel as a service of its own beside an unchanged gateway: `oncegate start` on a data folder and
 * `node dist/apps/dispatcher-sql/main.js` on the same folder, a real MCP client, a real PostgreSQL server.
 */
describe('the SQL dispatcher as its own process beside the gateway', () => {
  let server: SharedPostgres;
  // The shop is a database and a user of this file's own on the run's shared server.
  const suffix = randomBytes(4).toString('hex');
  const database = `shop_${suffix}`;
  const user = `shop_writer_${suffix}`;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let dispatcher: ServiceProcess;
  let client: Client;
  let shop: pg.Pool;

  const changes = async (executionId: string) =>
    Number((await shop.query<{ count: string }>('SELECT count(*) FROM price_changes WHERE changed_by = $1', [executionId])).rows[0]!.count);

  beforeAll(async () => {
    server = await sharedPostgres();
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    await admin.query(`CREATE ROLE ${user} LOGIN PASSWORD '${CREDENTIAL_CANARY}'`);
    await admin.query(`CREATE DATABASE ${database} OWNER ${user}`);
    await admin.end();
    shop = new pg.Pool({ connectionString: server.url(database) });
    await shop.query(`
      CREATE TABLE prices (sku text PRIMARY KEY, cents integer NOT NULL, changed_by text);
      CREATE TABLE price_changes (changed_by text, cents integer);
      CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO price_changes VALUES (NEW.changed_by, NEW.cents); RETURN NEW; END $$;
      CREATE TRIGGER prices_change AFTER UPDATE ON prices FOR EACH ROW EXECUTE FUNCTION log_change();
      INSERT INTO prices (sku, cents) VALUES ('tea', 300), ('coffee', 450);
      ALTER TABLE prices OWNER TO ${user}; ALTER TABLE price_changes OWNER TO ${user};`);
    // The SQL channel's options: the gateway (which hosts no SQL channel) leaves them to the SQL process.
    folder = await gatewayFolder('http://127.0.0.1:9', { instance_lease: '2s', channels: '{ sql: { max_rows: 1 } }' }, [{ ref: 'shop-db', kind: 'password', bind: [`127.0.0.1:${server.port}`] }]);
    appendFileSync(join(folder.dir, 'tools.yaml'), sqlTools(server.port, database, user));
    gateway = await startGatewayProcess(folder);
    dispatcher = await startService('dispatcher-sql', { configFile: folder.configFile, cwd: folder.dir });
    ({ client } = await connectClient(gateway.url, gateway.devToken));
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await dispatcher?.stop();
    await gateway?.stop();
    await shop?.end();
    folder?.dispose();
  });

  it('given a call of a SQL tool, then the gateway accepts it, the SQL process runs it and the agent reads the row count', async () => {
    const result = await client.callTool({ name: 'set_price', arguments: { sku: 'tea', cents: 320 } });

    expect(result.isError ?? false).toBe(false);
    const text = (result.content as Array<{ type: string; text: string }>)[0]!.text;
    expect(text).toContain('"rowCount":1');
    expect((await shop.query('SELECT cents FROM prices WHERE sku = $1', ['tea'])).rows).toEqual([{ cents: 320 }]);
    expect(dispatcher.output()).toContain('Oncegate dispatcher-sql is running');
  });

  it('given max_rows: 1 in channels.sql of the configuration, then the SQL process keeps one row of a longer result and says how many there were', async () => {
    const result = await client.callTool({ name: 'list_prices', arguments: {} });

    expect(result.isError ?? false).toBe(false);
    const answer = (result.structuredContent as { response: { rows: Array<{ sku: string }>; rowsCut?: number } }).response;
    expect(answer.rows.map((row) => row.sku)).toEqual(['coffee']);
    expect(answer.rowsCut).toBe(2);
  });

  it('given the SQL process is killed -9 while its statement waits on a lock, when it restarts and the agent calls again, then the statement takes effect exactly once', async () => {
    const known = new Set((await readJournal(folder.journal)).map((event) => event.metadata['executionId']));
    const holder = new pg.Client({ connectionString: server.url(database) });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query("SELECT * FROM prices WHERE sku = 'coffee' FOR UPDATE");
    const first = client.callTool({ name: 'set_price', arguments: { sku: 'coffee', cents: 500 } }).catch((error: unknown) => error);
    const dispatched = await eventually(async () => (await readJournal(folder.journal)).find((event) => event.type === 'Dispatched' && !known.has(event.metadata['executionId']) && (event.metadata['actor'] as string).includes('dispatcher-sql')));
    const executionId = dispatched.metadata['executionId'] as string;

    await dispatcher.kill();
    // The server rolls the statement back when its connection goes: COMMIT was never sent.
    await holder.query('ROLLBACK');
    await holder.end();
    expect(await changes(executionId)).toBe(0);
    dispatcher = await startService('dispatcher-sql', { configFile: folder.configFile, cwd: folder.dir });
    // The gateway's sweeper finds the attempt's process gone once its lease lapses: the outcome is unknown.
    await eventually(async () => (await readJournal(folder.journal)).find((event) => event.type === 'OutcomeUnknown' && event.metadata['executionId'] === executionId), 30_000);
    await first;

    const again = await client.callTool({ name: 'set_price', arguments: { sku: 'coffee', cents: 500 } });
    const text = (again.content as Array<{ type: string; text: string }>)[0]!.text;
    expect(text, text).toContain('"rowCount":1');
    expect((await shop.query('SELECT cents FROM prices WHERE sku = $1', ['coffee'])).rows).toEqual([{ cents: 500 }]);
    expect(await changes(executionId)).toBe(1);
    const journal = await readJournal(folder.journal);
    expect(journal.filter((event) => event.type === 'Dispatched' && event.metadata['executionId'] === executionId)).toHaveLength(2);
    // The password never reaches the journal nor any process's output.
    expect(JSON.stringify(journal)).not.toContain(CREDENTIAL_CANARY.slice(0, 8));
    expect(gateway.output() + dispatcher.output()).not.toContain(CREDENTIAL_CANARY.slice(0, 8));
  });

  it('given a mistake in a SQL tool of the contract file, then the SQL process refuses to start and names the file, line and column', () => {
    const broken = join(folder.dir, 'broken-tools.yaml');
    writeFileSync(broken, `version: 1\ntools:${sqlTools(server.port, database, user).replace('"UPDATE prices SET cents = $1, changed_by = $2 WHERE sku = $3"', '"UPDATE prices SET cents = {{args.cents}}"')}`);
    const config = join(folder.dir, 'broken.yaml');
    writeFileSync(config, `data_dir: ${folder.dataDir}\ncontracts: ${broken}\ndev_token: true\n`);

    const run = spawnSync(process.execPath, [MAIN, '--config', config], { encoding: 'utf8', timeout: 30_000 });

    expect(run.status).toBe(1);
    expect(run.stderr).toContain('the contract file is invalid; nothing was started');
    expect(run.stderr).toMatch(/broken-tools\.yaml:16:\d+ tools\[0\]\.plugin\.statement: a template in the statement text would splice a value into SQL/);
  });

  it('given a misspelt field in channels.sql, then the SQL process refuses to start, naming its line and column and the nearest field', () => {
    const config = join(folder.dir, 'misspelt.yaml');
    writeFileSync(config, `data_dir: ${folder.dataDir}\ncontracts: ${join(folder.dir, 'tools.yaml')}\ndev_token: true\nchannels:\n  sql:\n    max_rowz: 10\n`);

    const run = spawnSync(process.execPath, [MAIN, '--config', config], { encoding: 'utf8', timeout: 30_000 });

    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`${config}:6:5 channels.sql.max_rowz: unknown field 'max_rowz'; did you mean 'max_rows'?`);
    expect(run.stderr).toContain('nothing was started');
  });
});
