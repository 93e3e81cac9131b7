import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-PostgreSQL harness
import { sharedPostgres } from '../../../../../test/support/shared-servers';

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const LAUNCHER = join(ROOT, 'bin/oncegate.mjs');
const TOOLS = join(ROOT, 'examples/tools.yaml');
/** In the store URL: the shared server trusts `postgres` from loopback, so it is never checked, and must be shown nowhere. */
const PASSWORD = 'init-pass-canary-71c4';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a statement as the server's superuser on `database`, as the operator's own tools would. */
async function sql(text: string, database = 'postgres'): Promise<unknown[]> {
  const client = new Client({ connectionString: (await sharedPostgres()).url(database) });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

describe('oncegate init against the configured store (real processes, the run\'s PostgreSQL)', { timeout: 90_000 }, () => {
  let dir: string;
  let configFile: string;
  const databases: string[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-init-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  afterAll(async () => {
    for (const database of databases) await sql(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
  });

  /** A configuration on PostgreSQL whose URL names `database` (which may not exist), with a password in it. */
  async function onPostgres(database: string): Promise<void> {
    const server = await sharedPostgres();
    configFile = join(dir, 'oncegate.yaml');
    writeFileSync(configFile, `data_dir: ${join(dir, 'data')}\ncontracts: ${TOOLS}\nstore: { driver: postgres, url: 'postgres://postgres:${PASSWORD}@127.0.0.1:${server.port}/${database}' }\n`);
  }

  function oncegate(args: string[]): Promise<Run> {
    const child = spawn(process.execPath, [LAUNCHER, ...args, '--config', configFile], {
      cwd: dir,
      env: { ...process.env, ONCEGATE_MASTER_KEY: undefined, ONCEGATE_MASTER_KEY_FILE: undefined, ONCEGATE_STORE_URL: undefined },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
  }

  const exists = async (database: string) => (await sql(`SELECT 1 FROM pg_database WHERE datname = '${database}'`)).length === 1;

  it('given a store URL naming a database the server does not have, when init runs, then it refuses naming the database, the server and how to create it, makes no keys, and shows no password', async () => {
    const server = await sharedPostgres();
    const database = `absent_${randomBytes(4).toString('hex')}`;
    await onPostgres(database);

    const refused = await oncegate(['init', '--dev']);

    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      `cannot open the store postgres://postgres@127.0.0.1:${server.port}/${database} (schema oncegate): database "${database}" does not exist on ` +
        `127.0.0.1:${server.port}; create it there as a user allowed to (createdb -h 127.0.0.1 -p ${server.port} -U postgres ${database}, or in psql: ` +
        `CREATE DATABASE "${database}";), then try again (3D000 database "${database}" does not exist); or run oncegate init --create-database to ` +
        "create it as the store URL's user; nothing was made\n",
    );
    expect(existsSync(join(dir, 'data', 'keys'))).toBe(false);
    expect(await exists(database)).toBe(false);
  });

  it('given the same, when init runs with --create-database, then it creates the database and prepares the store, and a second init finds both there', async () => {
    const server = await sharedPostgres();
    const database = `created_${randomBytes(4).toString('hex')}`;
    databases.push(database);
    await onPostgres(database);

    const created = await oncegate(['init', '--dev', '--create-database']);

    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toBe(
      [
        `created: database ${database} on 127.0.0.1:${server.port}`,
        `store ready: postgres postgres://postgres:***@127.0.0.1:${server.port}/${database}`,
        `created: journal public key ${join(dir, 'data', 'keys', 'journal-seal.pub.pem')}`,
        '',
      ].join('\n'),
    );
    expect(await exists(database)).toBe(true);
    // The store is prepared: its schema is in the new database.
    expect(await sql(`SELECT to_regclass('oncegate.store_meta')::text AS meta`, database)).toEqual([{ meta: 'oncegate.store_meta' }]);

    const again = await oncegate(['init', '--dev', '--create-database']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^store ready: postgres .*\nalready there: journal public key /);
    expect(`${created.stdout}${created.stderr}${again.stdout}${again.stderr}`).not.toContain(PASSWORD);
  });

  it('given a SQLite store, when init runs with --create-database, then it is a usage error and nothing is made', async () => {
    configFile = join(dir, 'oncegate.yaml');
    writeFileSync(configFile, `data_dir: ${join(dir, 'data')}\ncontracts: ${TOOLS}\n`);

    const refused = await oncegate(['init', '--dev', '--create-database']);

    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--create-database applies to store.driver postgres only; .*oncegate\.yaml sets sqlite/);
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });
});
