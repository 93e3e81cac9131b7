import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { IdempotencyKeyConflictError } from '@oncegate/domain';
import { EventStoreUnavailableError } from '@oncegate/event-store';
import { closestMatch, type ArgumentViolation } from '@oncegate/contracts';

/** JSON-RPC error codes of our own, in the implementation-defined range. */
export const ONCEGATE_ERROR_CODES = {
  /** The same code the HTTP front answers a 401 with. */
  unauthorized: -32001,
  idempotencyKeyConflict: -32010,
  notFound: -32011,
  storageUnavailable: -32012,
} as const;

export function unknownTool(name: string, known: readonly string[]): McpError {
  const match = closestMatch(name, known);
  return new McpError(
    ErrorCode.InvalidParams,
    `Unknown tool '${name}'${match ? ` — did you mean '${match}'?` : ''}; nothing was accepted`,
  );
}

export function invalidArguments(tool: string, violations: readonly ArgumentViolation[]): McpError {
  const list = violations.map((v) => `${v.pointer || '(arguments)'}: ${v.message}`).join('; ');
  return new McpError(ErrorCode.InvalidParams, `Invalid arguments for '${tool}': ${list}; nothing was accepted`, {
    violations,
  });
}

export function tokenRevoked(): McpError {
  return new McpError(
    ONCEGATE_ERROR_CODES.unauthorized,
    'Unauthorized: the agent token of this connection is unknown or revoked; nothing was accepted',
  );
}

export function invalidRun(run: string): McpError {
  const shown = run.length > 40 ? `${run.slice(0, 40)}…` : run;
  return new McpError(
    ErrorCode.InvalidParams,
    `The declared run '${shown}' is not a run id: use 1 to 128 letters, digits, '.', '_', '-' or ':' ` +
      '(_meta["io.oncegate/run"] or the Oncegate-Run header); nothing was accepted',
  );
}

/** What an agent is told while the journal cannot write; the file and the driver's code go to the log only. */
export const STORAGE_UNAVAILABLE_MESSAGE =
  'Storage unavailable: the gateway cannot write its journal right now (its store cannot be reached, or its disk is full); nothing was accepted ' +
  'and nothing was sent. Retry later: the same call will be matched as usual.';

/** The one place typed errors of a call become JSON-RPC errors; anything else is re-thrown unchanged. */
export function toMcpError(error: unknown): unknown {
  if (error instanceof EventStoreUnavailableError) {
    return new McpError(ONCEGATE_ERROR_CODES.storageUnavailable, STORAGE_UNAVAILABLE_MESSAGE);
  }
  if (error instanceof IdempotencyKeyConflictError) {
    return new McpError(
      ONCEGATE_ERROR_CODES.idempotencyKeyConflict,
      `The idempotency key was already used by execution ${error.firstExecutionId} with different arguments; ` +
        'use a new key for a new intent. Nothing was accepted.',
      { firstExecutionId: error.firstExecutionId },
    );
  }
  return error;
}
