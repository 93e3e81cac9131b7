import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LocalServer } from './local-server';
import { freePort } from './free-port';

const BIN = '/usr/lib/postgresql/15/bin';
const INITDB = join(BIN, 'initdb');
const POSTGRES = join(BIN, 'postgres');
const START_TIMEOUT_MS = 15_000;
const PORT_ATTEMPTS = 5;

const run = promisify(execFile);

/** A real PostgreSQL 15 server on 127.0.0.1, in a data folder of its own (temporary unless kept). */
export interface PostgresHandle extends LocalServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The superuser `postgres`, trusted from 127.0.0.1 without a password. */
  readonly user: 'postgres';
  /** Connection URL of the database `postgres` (or of `database`). */
  url(database?: string): string;
}

export interface StartPostgresOptions {
  /**
   * Trade the server's own durability for speed (`fsync`, `synchronous_commit` and `full_page_writes` off): what the
   * tests crash is the client, never the server's host. Default `true`; the benchmark starts it with `false`.
   */
  readonly fast?: boolean;
  /**
   * A folder to keep the server's data in, made on first use and reused after (`npm run local`). Default: a
   * temporary folder, removed by `stop`.
   */
  readonly dir?: string;
  /** The port to listen on. Default: a free one. */
  readonly port?: number;
  /**
   * Users other than `postgres` log in over TCP with their password (scram-sha-256) instead of being trusted: for
   * the tests of a credential a dispatcher takes from the vault. Applies to a data folder made by this start.
   */
  readonly passwordLogins?: boolean;
  /** The server's `max_connections`. Default 300; a server shared by a whole test run takes more. */
  readonly maxConnections?: number;
}

/**
 * Starts PostgreSQL 15 (Debian's `postgresql-15`) on a free loopback port: `initdb` into a temporary folder, then
 * `postgres` in the foreground, with its Unix socket in that folder and trust authentication on 127.0.0.1 only.
 * PostgreSQL refuses to run as root, so when the tests run as root both run as the `postgres` user.
 *
 * @throws Error naming the package to install when PostgreSQL 15 is missing.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresHandle> {
  if (!existsSync(INITDB) || !existsSync(POSTGRES)) {
    throw new Error(
      `${INITDB} not found: the PostgreSQL tests need PostgreSQL 15 (Debian: apt-get install -y --no-install-recommends postgresql-15; .ci/run installs it)`,
    );
  }
  const owner = processOwner();
  const kept = options.dir !== undefined;
  const root = options.dir ?? join(tmpdir(), `oncegate-postgres-${randomBytes(6).toString('hex')}`);
  const data = join(root, 'data');
  const made = !existsSync(join(data, 'PG_VERSION'));
  await mkdir(root, { recursive: true, mode: 0o700 });
  try {
    if (owner !== undefined) await chown(root, owner.uid, owner.gid);
    if (made) {
      await run(INITDB, ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'], {
        ...(owner ?? {}),
        cwd: root,
      });
      // Trust on the loopback address and the private socket only; nothing else may connect.
      const others = options.passwordLogins === true ? 'host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n' : 'host all all 127.0.0.1/32 trust\n';
      await writeFile(join(data, 'pg_hba.conf'), `local all all trust\n${others}`);
    }
    let lastError: Error | undefined;
    for (let tries = 0; tries < (options.port === undefined ? PORT_ATTEMPTS : 1); tries += 1) {
      const port = options.port ?? (await freePort());
      try {
        const start = () => launch(data, root, port, owner, options.fast ?? true, options.maxConnections ?? 300);
        return handle(await start(), start, kept ? undefined : root, port);
      } catch (error) {
        lastError = error as Error;
        // Another process may have taken the port between probing and binding; try a new one.
        if (!/could not bind|Address already in use/i.test(lastError.message)) break;
      }
    }
    throw lastError ?? new Error('postgres did not start');
  } catch (error) {
    if (!kept) await rm(root, { recursive: true, force: true });
    throw error;
  }
}

/** The `postgres` user's ids when running as root (PostgreSQL will not run as root); otherwise the current user runs it. */
function processOwner(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (line === undefined) throw new Error('no postgres user: install postgresql-15, which creates it');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Starts `postgres` in the foreground and waits for "database system is ready to accept connections". */
async function launch(
  data: string,
  socketDir: string,
  port: number,
  owner: { uid: number; gid: number } | undefined,
  fast: boolean,
  maxConnections: number,
): Promise<ChildProcess> {
  const settings = [
    'listen_addresses=127.0.0.1',
    `unix_socket_directories=${socketDir}`,
    `max_connections=${maxConnections}`,
    // Profiling: `CREATE EXTENSION pg_stat_statements` then reads what the server spent its time on.
    ...(process.env['ONCEGATE_PG_STATEMENTS'] === '1' ? ['shared_preload_libraries=pg_stat_statements'] : []),
    'shared_buffers=64MB',
    ...(fast ? ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'] : []),
  ];
  const child = spawn(POSTGRES, ['-D', data, '-p', String(port), ...settings.flatMap((setting) => ['-c', setting])], {
    ...(owner ?? {}),
    cwd: socketDir,
    stdio: ['ignore', 'ignore', 'pipe'],
    // A group of its own: a Ctrl-C in the terminal reaches the services, which stop first, and not the server under them.
    detached: true,
  });
  const log: string[] = [];
  return new Promise<ChildProcess>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => fail(new Error(`postgres did not start within ${START_TIMEOUT_MS} ms:\n${log.join('')}`)), START_TIMEOUT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      child.kill('SIGKILL');
      reject(error);
    };
    child.once('error', fail);
    child.once('exit', (code, signal) => fail(new Error(`postgres exited (${code ?? signal}) before it was ready:\n${log.join('')}`)));
    // Always drained, so the server never blocks on a full stderr pipe; the tail is kept for the errors above.
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      log.push(chunk);
      if (log.length > 50) log.shift();
      if (!settled && log.join('').includes('database system is ready to accept connections')) {
        settled = true;
        clearTimeout(timer);
        resolve(child);
      }
    });
  });
}

/** `root`: the temporary folder `stop` removes (none for a kept one). */
function handle(first: ChildProcess, launchAgain: () => Promise<ChildProcess>, root: string | undefined, port: number): PostgresHandle {
  let child: ChildProcess | undefined = first;
  const exited = (process: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (process.exitCode !== null || process.signalCode !== null) resolve();
      else process.once('exit', () => resolve());
    });
  const kill = async (signal: NodeJS.Signals) => {
    const running = child;
    child = undefined;
    if (running === undefined) return;
    running.kill(signal);
    await exited(running);
  };
  return {
    host: '127.0.0.1',
    port,
    user: 'postgres',
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    shutdown: () => kill('SIGINT'),
    async start() {
      if (child === undefined) child = await launchAgain();
    },
    async stop() {
      if (root === undefined) {
        // A kept folder is shut down cleanly, to be started again.
        await kill('SIGINT');
        return;
      }
      // Immediate shutdown: the folder is removed next, so nothing needs to be written back.
      await kill('SIGQUIT');
      await rm(root, { recursive: true, force: true });
    },
  };
}
