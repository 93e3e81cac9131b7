import { escapeIdentifier, type Pool } from 'pg';
import { EventStoreOpenError, EventStoreUnavailableError } from '@oncegate/event-store';

/**
 * PostgreSQL's and node-postgres' errors as the event-store port speaks of them. The server reports an SQLSTATE
 * (`code`, e.g. `23505`); the driver and Node report socket failures with Node's codes (`ECONNREFUSED`) or, for a
 * connection the server closed, only a message.
 */

/** Socket-level failures: the server cannot be reached or went away. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOENT']);

/**
 * SQLSTATEs of a server that cannot take the work now: connection exceptions (08), insufficient resources such as a
 * full disk (53), the server shutting down or starting (57P01–57P03), system and I/O errors (58), and a standby
 * that is read-only (25006).
 */
const UNAVAILABLE_STATE = /^(08|53|57P0[1-3]|58|25006)/;

/** node-postgres' messages for a connection that ended or could not be made in time (they carry no code). */
const UNAVAILABLE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed|Connection ended|not queryable/i;

/** The error's SQLSTATE or Node code, else its message. */
export function postgresCode(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && code.length > 0) return code;
  return String((error as Error)?.message ?? error);
}

/** The code and the message, for the operator: `57P01 terminating connection due to administrator command`. */
export function postgresDetail(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  const message = String((error as Error)?.message ?? error);
  return typeof code === 'string' && code.length > 0 && !message.includes(code) ? `${code} ${message}` : message;
}

/** Errors that mean the server cannot be reached or cannot do the work now, not a bug and not a refused append. */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string') {
    if (SOCKET_CODES.has(code) || UNAVAILABLE_STATE.test(code)) return true;
  }
  return UNAVAILABLE_MESSAGE.test(String((error as Error)?.message ?? ''));
}

/** A driver error as the port's `EventStoreUnavailableError` when the server is unavailable; others as they are. */
export function unavailableOr(location: string, error: unknown): unknown {
  return isUnavailable(error) ? new EventStoreUnavailableError(location, postgresDetail(error)) : error;
}

/** The server a store connects to and as whom, as node-postgres resolves them (never the password). */
export interface PostgresServer {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
}

/** SQLSTATE of a database the server does not have. */
export const NO_SUCH_DATABASE = '3D000';

/**
 * An error while opening the store: an unreachable server is `store_unavailable` (a later open succeeds once it is
 * back); a missing database (`no_database`, saying how to create it), refused credentials or missing privileges
 * (`access_denied`) are `store_open_failed`; others as they are.
 */
export function openFailure(location: string, error: unknown, server: PostgresServer): unknown {
  if (error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError) return error;
  if (isUnavailable(error)) return new EventStoreUnavailableError(location, postgresDetail(error));
  const code = (error as { code?: unknown })?.code;
  if (code === NO_SUCH_DATABASE) return new EventStoreOpenError(location, 'no_database', postgresDetail(error), missingDatabaseAdvice(server));
  // 28: invalid authorisation; 42501: insufficient privilege.
  if (typeof code === 'string' && /^(28|42501)/.test(code)) return new EventStoreOpenError(location, 'access_denied', postgresDetail(error));
  return error;
}

/** `host:port`, or the socket folder and port of a Unix-socket connection. */
export function serverName(server: PostgresServer): string {
  return server.host.startsWith('/') ? `the server at ${server.host} (port ${server.port})` : `${server.host}:${server.port}`;
}

/** How to create the database: PostgreSQL's own `createdb` for that server and user, or the SQL statement. */
export function missingDatabaseAdvice(server: PostgresServer): string {
  const { host, port, user, database } = server;
  const createdb = ['createdb', '-h', host, '-p', String(port), '-U', user, database].map(shellWord).join(' ');
  return (
    `database ${escapeIdentifier(database)} does not exist on ${serverName(server)}; create it there as a user allowed to ` +
    `(${createdb}, or in psql: CREATE DATABASE ${escapeIdentifier(database)};), then try again`
  );
}

/** A word as a POSIX shell reads it back: plain when it is safe, else in single quotes. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_.,:/@%+=-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A unique violation on `constraint`. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown };
  return e?.code === '23505' && e.constraint === constraint;
}

/**
 * A pool whose connections the server may end (a restart, a shutdown: FATAL 57P01) without ending the process.
 * node-postgres emits the error of an idle connection on the pool, and that of a connection held between two queries
 * of a transaction on the client that holds it; unheard, either is thrown. Both are heard here, and the next query
 * fails with the error or reconnects. Returns the pool.
 */
export function surviveServerLoss(pool: Pool): Pool {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
