/**
 * What an analyst asks the executions index, and how the CLI's options and the API's query parameters become it:
 * one parser for both, so `--state outcome_unknown` and `?state=outcome_unknown` are refused or answered alike.
 */
import { closestMatch } from '@oncegate/contracts';
import { EXECUTION_STATUSES, OPERATION_CLASSES, type ExecutionStatus, type OperationClass } from '@oncegate/domain';
import type { ExecutionRow } from './execution-row';

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 1000;

/** Where the next page starts: strictly older than this execution in the index's order (accepted at, then id). */
export interface PageCursor {
  readonly acceptedMs: number;
  readonly executionId: string;
}

/** The filters of one page; each list matches any of its values, and the lists all apply. */
export interface ExecutionsQuery {
  readonly tools?: readonly string[];
  readonly actors?: readonly string[];
  readonly classes?: readonly OperationClass[];
  readonly states?: readonly ExecutionStatus[];
  readonly runIds?: readonly string[];
  readonly channels?: readonly string[];
  readonly hosts?: readonly string[];
  /** Accepted at or after this instant (ms since the epoch). */
  readonly sinceMs?: number;
  /** Accepted strictly before this instant. */
  readonly untilMs?: number;
  /** Default `DEFAULT_PAGE_LIMIT`, at most `MAX_PAGE_LIMIT`. */
  readonly limit?: number;
  readonly after?: PageCursor;
}

/** How far the index has folded the journal. */
export interface IndexLag {
  /** The last global position folded (or examined and skipped). */
  readonly position: number;
  /** The store's head when asked. */
  readonly head: number;
  /** Events committed after `position`: 0 when the index is current. */
  readonly behind: number;
}

/** A page of executions, newest first. */
export interface ExecutionsPage {
  readonly executions: readonly ExecutionRow[];
  /** Pass it back (`--cursor`, `?cursor=`) for the next page; `null` on the last page. */
  readonly nextCursor: string | null;
  readonly index: IndexLag;
}

/** A filter the index cannot answer: names the parameter and what it takes. */
export class InvalidExecutionsQueryError extends Error {
  readonly kind = 'invalid_executions_query' as const;
  constructor(
    /** The parameter's name as the caller wrote it (`state`, `since`, …). */
    readonly parameter: string,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidExecutionsQueryError';
  }
}

/** The query's parameters by name, as text: a CLI's repeated options or a URL's repeated parameters. */
export type QueryParameters = Readonly<Record<string, string | readonly string[] | undefined>>;

/** The names the parser knows, for refusing the others. */
export const QUERY_PARAMETERS = ['tool', 'actor', 'class', 'state', 'run', 'channel', 'host', 'since', 'until', 'limit', 'cursor'] as const;

const RELATIVE = /^(\d+)\s*(s|m|h|d|w)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * An instant written as ISO-8601 (a date, or a date and time; without a zone it is the local time of this machine)
 * or as a time before `nowMs`: `90s`, `30m`, `1h`, `2d`, `1w`.
 */
export function parseInstant(parameter: string, text: string, nowMs: number): number {
  const trimmed = text.trim();
  const relative = RELATIVE.exec(trimmed);
  if (relative !== null) return nowMs - Number(relative[1]) * UNIT_MS[relative[2]!]!;
  const ms = ISO_WITH_ZONE.test(trimmed) ? Date.parse(trimmed) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new InvalidExecutionsQueryError(parameter, `${parameter} '${trimmed.slice(0, 64)}' is not a time: write an ISO-8601 instant (2026-07-22T10:00:00Z) or a time ago (30m, 1h, 2d)`);
  }
  return ms;
}

/** Every value of a parameter: repeated, comma-separated, or both; blanks dropped. */
function valuesOf(parameters: QueryParameters, name: string): string[] {
  const given = parameters[name];
  const list = given === undefined ? [] : typeof given === 'string' ? [given] : given;
  return list.flatMap((value) => value.split(',')).map((value) => value.trim()).filter((value) => value.length > 0);
}

function oneOf<T extends string>(parameter: string, values: string[], names: readonly T[], what: string): T[] {
  return values.map((value) => {
    if ((names as readonly string[]).includes(value)) return value as T;
    const close = closestMatch(value, names);
    const hint = close === undefined ? '' : ` — did you mean '${close}'?`;
    throw new InvalidExecutionsQueryError(parameter, `${parameter} '${value.slice(0, 64)}' is not ${what}${hint} (one of: ${names.join(', ')})`);
  });
}

function single(parameters: QueryParameters, name: string): string | undefined {
  const values = valuesOf(parameters, name);
  if (values.length > 1) throw new InvalidExecutionsQueryError(name, `${name} is given ${values.length} times; give it once`);
  return values[0];
}

/** `limit`: a whole number from 1 to `MAX_PAGE_LIMIT`. */
function limitOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_PAGE_LIMIT;
  const limit = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw new InvalidExecutionsQueryError('limit', `limit '${text.slice(0, 16)}' must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
  }
  return limit;
}

/** The cursor a page printed: base64url of `<accepted ms>.<execution id>`. */
export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(`${cursor.acceptedMs}.${cursor.executionId}`, 'utf8').toString('base64url');
}

export function decodeCursor(text: string): PageCursor {
  const decoded = /^[A-Za-z0-9_-]{1,200}$/.test(text) ? Buffer.from(text, 'base64url').toString('utf8') : '';
  const match = /^(-?\d{1,16})\.(ex_[0-9A-HJKMNP-TV-Z]{26})$/.exec(decoded);
  if (match === null) throw new InvalidExecutionsQueryError('cursor', 'cursor is not one this index printed: pass the nextCursor of the previous page as it is');
  return { acceptedMs: Number(match[1]), executionId: match[2]! };
}

/**
 * Reads the query from text parameters, checking every value: a state or class the domain does not name is refused
 * with the closest name, a time that is not one is refused with what to write.
 */
export function parseExecutionsQuery(parameters: QueryParameters, nowMs: number): ExecutionsQuery {
  const unknown = Object.keys(parameters).filter((name) => parameters[name] !== undefined && !(QUERY_PARAMETERS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    const name = unknown[0]!;
    const close = closestMatch(name, QUERY_PARAMETERS);
    throw new InvalidExecutionsQueryError(name, `unknown filter '${name.slice(0, 32)}'${close === undefined ? '' : ` — did you mean '${close}'?`} (filters: ${QUERY_PARAMETERS.join(', ')})`);
  }
  const list = (name: string) => {
    const values = valuesOf(parameters, name);
    return values.length === 0 ? undefined : values;
  };
  const states = list('state');
  const classes = list('class');
  const since = single(parameters, 'since');
  const until = single(parameters, 'until');
  const cursor = single(parameters, 'cursor');
  const query: ExecutionsQuery = {
    ...optional('tools', list('tool')),
    ...optional('actors', list('actor')),
    ...optional('classes', classes && oneOf('class', classes, OPERATION_CLASSES, 'an operation class')),
    ...optional('states', states && oneOf('state', states, EXECUTION_STATUSES.filter((status) => status !== 'initial'), 'an execution state')),
    ...optional('runIds', list('run')),
    ...optional('channels', list('channel')),
    ...optional('hosts', list('host')),
    ...optional('sinceMs', since === undefined ? undefined : parseInstant('since', since, nowMs)),
    ...optional('untilMs', until === undefined ? undefined : parseInstant('until', until, nowMs)),
    limit: limitOf(single(parameters, 'limit')),
    ...optional('after', cursor === undefined ? undefined : decodeCursor(cursor)),
  };
  if (query.sinceMs !== undefined && query.untilMs !== undefined && query.sinceMs >= query.untilMs) {
    throw new InvalidExecutionsQueryError('until', 'until must be later than since');
  }
  return query;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** The page's limit, within bounds. */
export function limitOfQuery(query: ExecutionsQuery): number {
  return Math.min(Math.max(query.limit ?? DEFAULT_PAGE_LIMIT, 1), MAX_PAGE_LIMIT);
}
