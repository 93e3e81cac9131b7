import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { FaultProxy } from '@oncegate/dispatcher-kit/testing';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the tests run the shared real-PostgreSQL harness
import { sharedPostgres, type SharedPostgres } from '../../../../test/support/shared-servers';

/**
 * A shop's database on a real PostgreSQL server, reached through a fault proxy, with a user that logs in with a
 * password (the canary the tests look for): prices (one-row updates), payments (inserts), schema versions
 * (migration steps). Every row a statement writes or changes names the execution in `changed_by`, and a trigger
 * counts it in `effects`: how many times each execution took effect.
 */
export interface ShopDatabase {
  /** The run's shared server: the shop is a database and a user of its own on it. */
  readonly server: SharedPostgres;
  readonly database: string;
  readonly user: string;
  readonly proxy: FaultProxy;
  readonly password: string;
  /** Where the channel connects: the proxy in front of the server. */
  readonly host: '127.0.0.1';
  readonly port: number;
  /** Runs SQL in `shop` as the superuser (the test's own view, not through the proxy). */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<T>>;
  effects(executionId: string): Promise<number>;
  stop(): Promise<void>;
}

const SCHEMA = `
CREATE TABLE effects (execution_id text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION count_effect() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO effects (execution_id) VALUES (NEW.changed_by);
  RETURN NEW;
END $$;
CREATE TABLE prices (sku text PRIMARY KEY, cents integer NOT NULL, changed_by text);
CREATE TABLE payments (id bigserial PRIMARY KEY, payee text NOT NULL, cents integer NOT NULL, changed_by text NOT NULL);
CREATE TABLE schema_versions (component text PRIMARY KEY, version integer NOT NULL, changed_by text);
CREATE TRIGGER prices_effect AFTER UPDATE ON prices FOR EACH ROW EXECUTE FUNCTION count_effect();
CREATE TRIGGER payments_effect AFTER INSERT ON payments FOR EACH ROW EXECUTE FUNCTION count_effect();
CREATE TRIGGER schema_effect AFTER UPDATE ON schema_versions FOR EACH ROW EXECUTE FUNCTION count_effect();
INSERT INTO prices (sku, cents) SELECT 'sku-' || n, 100 FROM generate_series(1, 200) AS n;
INSERT INTO schema_versions (component, version) SELECT 'component-' || n, 1 FROM generate_series(1, 200) AS n;
`;

export async function openShopDatabase(): Promise<ShopDatabase> {
  const server = await sharedPostgres();
  const password = `sql-canary-${randomBytes(9).toString('hex')}`;
  const suffix = randomBytes(4).toString('hex');
  const database = `shop_${suffix}`;
  const user = `shop_writer_${suffix}`;
  const admin = new pg.Client({ connectionString: server.url() });
  await admin.connect();
  await admin.query(`CREATE ROLE ${user} LOGIN PASSWORD '${password}'`);
  await admin.query(`CREATE DATABASE ${database} OWNER ${user}`);
  await admin.end();
  const shop = new pg.Pool({ connectionString: server.url(database), max: 4 });
  const owner = await shop.connect();
  try {
    await owner.query(`SET ROLE ${user}`);
    await owner.query(SCHEMA);
  } finally {
    owner.release();
  }
  const proxy = await FaultProxy.start(server.port);
  return {
    server,
    database,
    user,
    proxy,
    password,
    host: '127.0.0.1',
    get port() {
      return proxy.port;
    },
    query: (text, values) => shop.query(text, values),
    async effects(executionId) {
      const result = await shop.query<{ count: string }>('SELECT count(*) FROM effects WHERE execution_id = $1', [executionId]);
      return Number(result.rows[0]!.count);
    },
    async stop() {
      await proxy.stop();
      await shop.end();
    },
  };
}

/** The section lines every SQL tool of the tests shares: where the shop is and who logs in. */
export function shopConnection(shop: ShopDatabase): string {
  return `host: 127.0.0.1, port: ${shop.port}, database: ${shop.database}, user: ${shop.user}`;
}
