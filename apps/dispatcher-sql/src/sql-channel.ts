import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import pg from 'pg';
import { defineChannel, templateValue, type ChannelAttempt, type ChannelDriver, type SendOutcome, type StatusFinding } from '@oncegate/dispatcher-kit';
import { sqlOptions, SQL_OPTIONS_SCHEMA, type SqlOptions } from './sql-options';
import { checkSqlStatements, SQL_SECTION_SCHEMA, sqlSection, type SqlSection, type SqlStatement } from './sql-section';

/**
 * The idempotency record: one row per execution that took effect, written in the same transaction as its
 * statement. A row means the statement committed; no row (read under the execution's lock) means it did not.
 */
export const IDEMPOTENCY_TABLE = 'oncegate_sql_executions';

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS ${IDEMPOTENCY_TABLE} (
  execution_id text PRIMARY KEY,
  attempt integer NOT NULL,
  tool text NOT NULL,
  outcome text NOT NULL,
  result jsonb NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now()
)`;

/** Held by an attempt's transaction and by a look-up: a look-up waits for an attempt still running on the server. */
const LOCK = `SELECT pg_advisory_xact_lock(hashtextextended('oncegate:' || $1::text, 0))`;
const LOOK_UP = `SELECT attempt, outcome, result, recorded_at FROM ${IDEMPOTENCY_TABLE} WHERE execution_id = $1`;
/** After the statement timeout, how long the answer of a statement or a COMMIT is awaited before the connection is cut. */
const ANSWER_MARGIN_MS = 1_000;

interface StoredRecord {
  readonly attempt: number;
  readonly outcome: string;
  readonly result: Record<string, unknown>;
  readonly recorded_at: Date;
}

/** One connection of one attempt, with its deadline: past it the socket is cut. */
class Session {
  readonly client: pg.Client;
  private timer: NodeJS.Timeout | undefined;
  timedOut = false;

  constructor(section: SqlSection, ssl: TlsOptions, password: string | undefined, attempt: ChannelAttempt) {
    this.client = new pg.Client({
      host: section.host,
      port: section.port,
      database: section.database,
      user: section.user,
      ...(password === undefined ? {} : { password }),
      ssl,
      connectionTimeoutMillis: attempt.limits.connectTimeoutMs,
      application_name: `oncegate ${attempt.executionId}`,
    });
    // A connection that breaks between queries must not throw out of the process; the query in flight reports it.
    this.client.on('error', () => undefined);
  }

  /** Cuts the connection if the answer has not come `ms` from now. */
  deadline(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      (this.client as unknown as { connection: { stream: Socket } }).connection.stream.destroy();
    }, ms);
  }

  async end(): Promise<void> {
    clearTimeout(this.timer);
    await this.client.end().catch(() => undefined);
  }
}

type TlsOptions = false | { rejectUnauthorized: boolean; servername?: string; ca?: string };

/** A PostgreSQL error the server answered with (it has a SQLSTATE), as opposed to a connection that broke. */
function sqlState(error: unknown): string | undefined {
  return error instanceof pg.DatabaseError && typeof error.code === 'string' ? error.code : undefined;
}

/** At COMMIT, only these answers prove the transaction rolled back: an integrity violation or a serialization failure. */
function rolledBackAtCommit(state: string): boolean {
  return state.startsWith('23') || state.startsWith('40');
}

function describeError(error: unknown): string {
  const state = sqlState(error);
  const message = (error as Error).message ?? String(error);
  return state === undefined ? message : `SQLSTATE ${state}: ${message}`;
}

/** Sent with the extended protocol (node-postgres's `queryMode`, missing from its types): the server refuses a second statement. */
function extended(text: string, values: unknown[]): pg.QueryConfig {
  return { text, values, queryMode: 'extended' } as pg.QueryConfig;
}

function bound(statement: SqlStatement, attempt: ChannelAttempt): unknown[] {
  return statement.parameters.map((parameter) => {
    const value = typeof parameter === 'string' ? templateValue(parameter, attempt.args, attempt.executionId) : parameter;
    return value === undefined ? null : value;
  });
}

/** What the agent reads of a result: at most `maxRows` rows (`max_rows` of the channel's options), and how many there were when cut. */
function answer(result: pg.QueryResult, maxRows: number): Record<string, unknown> {
  return { command: result.command, rowCount: result.rowCount, rows: result.rows.slice(0, maxRows), ...(result.rows.length > maxRows ? { rowsCut: result.rows.length } : {}) };
}

function storedAnswer(record: StoredRecord): SendOutcome {
  const outcome = record.outcome === 'succeeded' ? 'succeeded' : 'failed';
  const body = { ...record.result, recorded: { byAttempt: record.attempt, at: record.recorded_at.toISOString(), note: 'this execution had already taken effect; it was not run again' } };
  return { kind: 'observed', outcome, contentType: 'application/json', body: JSON.stringify(body) };
}

/**
 * Runs one SQL statement per attempt in a transaction that also records the execution id, so the database itself
 * recognises an attempt sent again. Until COMMIT is sent, a failure of any kind rolls everything back: the outcome is
 * definite. Only a COMMIT without an answer is unknown, and the execution id's record decides it.
 */
export class SqlChannelDriver implements ChannelDriver {
  /** Databases whose idempotency table exists, by host:port/database. */
  private readonly tables = new Map<string, Promise<void>>();
  /** The `tls_ca` files, read once each. */
  private readonly authorities = new Map<string, string>();

  constructor(private readonly options: SqlOptions = sqlOptions({})) {}

  /**
   * How the connection is protected: `verify-full` checks the server's certificate and name (the default off
   * loopback), with the authorities of `tls_ca` when given.
   *
   * @throws Error when the `tls_ca` file cannot be read
   */
  private tlsOf(section: SqlSection): TlsOptions {
    switch (section.tls) {
      case 'disable':
        return false;
      case 'require':
        return { rejectUnauthorized: false };
      case 'verify-full': {
        const file = section.tls_ca;
        if (file === null) return { rejectUnauthorized: true, servername: section.host };
        let ca = this.authorities.get(file);
        if (ca === undefined) {
          ca = readFileSync(file, 'utf8');
          this.authorities.set(file, ca);
        }
        return { rejectUnauthorized: true, servername: section.host, ca };
      }
    }
  }

  async send(attempt: ChannelAttempt): Promise<SendOutcome> {
    const section = sqlSection(attempt.section);
    let parameters: unknown[];
    try {
      parameters = bound(section, attempt);
    } catch (error) {
      return { kind: 'not_sent', reason: `the parameters cannot be filled: ${(error as Error).message}` };
    }
    const where = `${section.user}@${section.host}:${section.port}/${section.database}`;
    let ssl: TlsOptions;
    try {
      ssl = this.tlsOf(section);
    } catch (error) {
      return { kind: 'not_sent', reason: `could not connect to ${where}: the tls_ca file cannot be read: ${(error as Error).message}` };
    }
    const session = new Session(section, ssl, attempt.secret?.toString('utf8'), attempt);
    let phase: 'connect' | 'prepare' | 'statement' | 'commit' = 'connect';
    try {
      await session.client.connect();
      phase = 'prepare';
      session.deadline(attempt.limits.responseTimeoutMs + ANSWER_MARGIN_MS);
      const reading = attempt.operationClass === 'read_only';
      if (!reading) await this.ensureTable(session.client, section);
      // READ COMMITTED whatever the database's default: the look-up after the lock must see a row committed while it waited.
      await session.client.query(reading ? 'BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY' : 'BEGIN ISOLATION LEVEL READ COMMITTED');
      await session.client.query(`SET LOCAL statement_timeout = ${Math.max(1, attempt.limits.responseTimeoutMs)}`);
      if (!reading) {
        await session.client.query(LOCK, [attempt.executionId]);
        const found = await session.client.query<StoredRecord>(LOOK_UP, [attempt.executionId]);
        // Recorded: it took effect already, whatever becomes of this connection (closing it rolls back this read).
        if (found.rows[0] !== undefined) {
          await session.client.query('ROLLBACK').catch(() => undefined);
          return storedAnswer(found.rows[0]);
        }
      }
      phase = 'statement';
      // The extended protocol: the server itself refuses a text holding more than one statement.
      const result = await session.client.query(extended(section.statement, parameters));
      if (section.expect_rows !== null && result.rowCount !== section.expect_rows) {
        await session.client.query('ROLLBACK');
        const body = { ...answer(result, this.options.max_rows), rolledBack: `expected ${section.expect_rows} row${section.expect_rows === 1 ? '' : 's'} affected, ${result.rowCount ?? 0} were: rolled back, nothing changed` };
        return { kind: 'observed', outcome: 'failed', contentType: 'application/json', body: JSON.stringify(body) };
      }
      const body = JSON.stringify(answer(result, this.options.max_rows));
      if (!reading) {
        await session.client.query(`INSERT INTO ${IDEMPOTENCY_TABLE} (execution_id, attempt, tool, outcome, result) VALUES ($1, $2, $3, 'succeeded', $4)`, [
          attempt.executionId,
          attempt.attempt,
          attempt.tool.name,
          body,
        ]);
      }
      phase = 'commit';
      await session.client.query('COMMIT');
      return { kind: 'observed', outcome: 'succeeded', contentType: 'application/json', body };
    } catch (error) {
      return this.failure(error, phase, session, where);
    } finally {
      await session.end();
    }
  }

  /** What a failure in `phase` means. */
  private async failure(error: unknown, phase: 'connect' | 'prepare' | 'statement' | 'commit', session: Session, where: string): Promise<SendOutcome> {
    const state = sqlState(error);
    if (phase === 'commit' && (state === undefined || !rolledBackAtCommit(state))) {
      // COMMIT was sent and no answer proves it rolled back: it may have committed. The execution id's record will tell.
      return { kind: 'unknown', reason: session.timedOut ? 'timeout_after_send' : 'connection_reset' };
    }
    if (state !== undefined) await session.client.query('ROLLBACK').catch(() => undefined);
    // Nothing of the statement ran. (After an earlier attempt's unknown outcome the kit keeps the execution unknown.)
    if (phase === 'connect') return { kind: 'not_sent', reason: `could not connect to ${where}: ${describeError(error)}` };
    if (phase === 'prepare') return { kind: 'not_sent', reason: `the statement was not run on ${where}: ${describeError(error)}` };
    // The statement failed, or the connection broke before COMMIT was sent: the transaction rolled back.
    const cause = state === '57014' ? 'the statement timed out (statement_timeout)' : state === undefined ? `the connection broke before COMMIT (${describeError(error)})` : describeError(error);
    return { kind: 'observed', outcome: 'failed', contentType: 'text/plain', body: `${cause}; rolled back, nothing changed` };
  }

  /**
   * A conditional write's evidence: the execution id's record (waiting for an attempt still running on the server),
   * then the contract's status query. Recorded: the write took effect, so it must not be sent again.
   */
  async queryStatus(attempt: ChannelAttempt): Promise<StatusFinding> {
    const section = sqlSection(attempt.section);
    const query = section.status_query;
    if (query === null) return { preconditionHolds: false, observedStatus: 'no status query in the contract' };
    const session = new Session(section, this.tlsOf(section), attempt.secret?.toString('utf8'), attempt);
    try {
      await session.client.connect();
      session.deadline(attempt.limits.responseTimeoutMs + ANSWER_MARGIN_MS);
      await this.ensureTable(session.client, section);
      await session.client.query('BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY');
      await session.client.query(`SET LOCAL lock_timeout = ${Math.max(1, attempt.limits.responseTimeoutMs)}`);
      await session.client.query(LOCK, [attempt.executionId]);
      const found = await session.client.query<StoredRecord>(LOOK_UP, [attempt.executionId]);
      const record = found.rows[0];
      if (record !== undefined) {
        return { preconditionHolds: false, observedStatus: `execution recorded by attempt ${record.attempt}: the write took effect` };
      }
      const result = await session.client.query(extended(query.statement, bound(query, attempt)));
      const row = result.rows[0] as Record<string, unknown> | undefined;
      const observed = row?.[query.column];
      const expected = typeof query.equals === 'string' ? templateValue(query.equals, attempt.args, attempt.executionId) : query.equals;
      const seen = row === undefined ? 'no row' : `${query.column}=${JSON.stringify(observed ?? null)}`;
      return { preconditionHolds: row !== undefined && String(observed) === String(expected), observedStatus: seen.slice(0, 200) };
    } catch (error) {
      return { preconditionHolds: false, observedStatus: `not asked: ${describeError(error)}`.slice(0, 200) };
    } finally {
      await session.client.query('ROLLBACK').catch(() => undefined);
      await session.end();
    }
  }

  private ensureTable(client: pg.Client, section: SqlSection): Promise<void> {
    // Per user too: the unqualified name is found on the user's search_path, as every attempt of a tool finds it.
    const key = `${section.user}@${section.host}:${section.port}/${section.database}`;
    let ready = this.tables.get(key);
    if (ready === undefined) {
      ready = client.query(CREATE_TABLE).then(
        () => undefined,
        (error: unknown) => {
          // Two processes creating it at once: the loser sees the winner's table.
          if (sqlState(error) === '23505' || sqlState(error) === '42P07') return;
          this.tables.delete(key);
          throw error;
        },
      );
      this.tables.set(key, ready);
    }
    return ready;
  }
}

/** The SQL channel: PostgreSQL statements, parameterised only, recognised by the database when sent again. */
export const sqlKit = defineChannel({
  name: 'sql',
  classes: ['read_only', 'idempotent_write', 'conditional_write', 'irreversible'],
  contract: { schema: SQL_SECTION_SCHEMA, check: checkSqlStatements },
  options: { schema: SQL_OPTIONS_SCHEMA },
  credentialKinds: ['password'],
  open: ({ options }) => new SqlChannelDriver(sqlOptions(options)),
});
