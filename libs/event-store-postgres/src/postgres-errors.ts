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

/**
 * An error while opening the store: an unreachable server is `store_unavailable` (a later open succeeds once it is
 * back); refused credentials, a missing database or missing privileges are `store_open_failed`; others as they are.
 */
export function openFailure(location: string, error: unknown): unknown {
  if (error instanceof EventStoreOpenError || error instanceof EventStoreUnavailableError) return error;
  if (isUnavailable(error)) return new EventStoreUnavailableError(location, postgresDetail(error));
  const code = (error as { code?: unknown })?.code;
  // 28: invalid authorisation; 3D000: no such database; 42501: insufficient privilege.
  if (typeof code === 'string' && /^(28|3D000|42501)/.test(code)) return new EventStoreOpenError(location, 'cannot_open', postgresDetail(error));
  return error;
}

/** A unique violation on `constraint`. */
export function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: unknown; constraint?: unknown };
  return e?.code === '23505' && e.constraint === constraint;
}
