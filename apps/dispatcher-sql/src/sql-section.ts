import { scanTemplates, type PluginSectionCheck } from '@oncegate/dispatcher-kit';
import { statementShape } from './sql-text';

/** One statement of a SQL tool: its text with `$1`…`$n` and the values bound to them. */
export interface SqlStatement {
  readonly statement: string;
  /** Literals, or `{{args.<name>}}` / `{{execution.id}}` templates: always bound as parameters, never spliced into the text. */
  readonly parameters: readonly unknown[];
}

/** A SQL tool's `plugin:` section, as checked. */
export interface SqlSection extends SqlStatement {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
  /** The rows the statement must affect; another count rolls it back as a failure. `null`: any. */
  readonly expect_rows: number | null;
  /** `verify-full` (the default off loopback), `require` (encrypted, not verified) or `disable` (the default on loopback). */
  readonly tls: 'disable' | 'require' | 'verify-full';
  /** A PEM file of the certificate authorities `verify-full` trusts; `null`: the system's. */
  readonly tls_ca: string | null;
  /** Conditional writes: what is read after an unknown outcome to decide whether the write may be sent again. */
  readonly status_query: (SqlStatement & { readonly column: string; readonly equals: unknown }) | null;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

const PARAMETERS = {
  type: 'array',
  maxItems: 100,
  items: { type: ['string', 'number', 'boolean', 'null'] },
  description: 'The values bound to $1…$n, in order: literals, or exactly one template each ({{args.<name>}}, {{execution.id}}).',
};

/**
 * The JSON Schema of a SQL tool's `plugin:` section, as the channel publishes it (`oncegate channels schema`): the
 * kit checks a section against it first, then `checkSqlStatements` says what a schema cannot (the statement's text,
 * its parameters' count, what the tool's class allows).
 */
export const SQL_SECTION_SCHEMA = {
  title: 'A SQL tool: one PostgreSQL statement',
  type: 'object',
  additionalProperties: false,
  required: ['host', 'port', 'database', 'user', 'statement'],
  properties: {
    host: { type: 'string', minLength: 1, pattern: '^[^{}\\s]+$', description: 'The PostgreSQL server: a name or an address, no template.' },
    port: { type: 'integer', minimum: 1, maximum: 65535, description: "The server's port; the tool's credential is bound to host:port." },
    database: { type: 'string', minLength: 1, pattern: '^[^{}]+$', description: 'The database, no template.' },
    user: { type: 'string', minLength: 1, pattern: '^[^{}]+$', description: "The user; its password is the tool's credential_ref, a password credential of the vault." },
    statement: { type: 'string', minLength: 1, description: 'One statement with $1…$n for its values; no template, no transaction control.' },
    parameters: PARAMETERS,
    expect_rows: { type: 'integer', minimum: 0, description: 'The rows the statement must affect; another count rolls it back as an error answer. Default: any.' },
    tls: {
      enum: ['disable', 'require', 'verify-full'],
      description: 'verify-full checks the certificate and name (the default off loopback); require encrypts without verifying; disable (the default on loopback) is refused off loopback.',
    },
    tls_ca: { type: 'string', pattern: '^/', description: "An absolute path to a PEM file of the authorities verify-full trusts; default: the system's." },
    status_query: {
      type: 'object',
      additionalProperties: false,
      required: ['statement', 'column', 'equals'],
      description: 'conditional_write only: what is read after an unknown outcome to decide whether the write may be sent again.',
      properties: {
        statement: { type: 'string', minLength: 1, description: 'A SELECT with $1…$n for its values.' },
        parameters: PARAMETERS,
        column: { type: 'string', minLength: 1, description: 'The column of the first row compared with equals.' },
        equals: { type: ['string', 'number', 'boolean', 'null'], description: 'The value the precondition holds for: a literal or one template.' },
      },
    },
  },
};

/** Words that would end or nest the channel's own transaction: the kit's transaction holds the idempotency record. */
const TRANSACTION_CONTROL = new Set(['BEGIN', 'START', 'COMMIT', 'END', 'ROLLBACK', 'ABORT', 'SAVEPOINT', 'RELEASE', 'PREPARE']);

/** Checks one statement and its parameters; reports under `at` (`[]` or `['status_query']`). */
function checkStatement(statement: SqlStatement, at: ReadonlyArray<string>, report: Parameters<PluginSectionCheck>[1], reading: boolean): void {
  const text = statement.statement;
  if (text.includes('{{') || text.includes('}}')) {
    report([...at, 'statement'], 'a template in the statement text would splice a value into SQL; write $1, $2, … and put the templates in parameters');
    return;
  }
  const shape = statementShape(text);
  if (shape.unterminated !== undefined) report([...at, 'statement'], `${shape.unterminated} is not closed`);
  if (shape.severalStatements) report([...at, 'statement'], 'holds more than one statement; a tool runs exactly one');
  if (TRANSACTION_CONTROL.has(shape.firstWord)) report([...at, 'statement'], `${shape.firstWord} controls the transaction, which the SQL channel holds itself (its idempotency record commits with the statement)`);
  if (reading && !['SELECT', 'WITH', 'VALUES', 'TABLE'].includes(shape.firstWord)) report([...at, 'statement'], `a status query reads: start it with SELECT (it starts with ${shape.firstWord || 'nothing'})`);
  const count = statement.parameters.length;
  if (shape.highestParameter !== count) {
    report([...at, 'parameters'], `the statement uses $1…$${shape.highestParameter} but ${count} parameter${count === 1 ? ' is' : 's are'} given`);
  } else {
    for (let number = 1; number <= count; number += 1) {
      if (!shape.parameters.includes(number)) report([...at, 'parameters', number - 1], `$${number} is not used in the statement`);
    }
  }
  statement.parameters.forEach((value, index) => {
    if (typeof value === 'string' && value.includes('{{') && scanTemplates(value).whole === undefined) {
      report([...at, 'parameters', index], 'a parameter is a literal or exactly one template ({{args.<name>}} or {{execution.id}})');
    }
  });
}

/** What the SQL channel checks of a section beyond its schema (the kit's `contract.check`, run once the schema passes). */
export const checkSqlStatements: PluginSectionCheck = (raw, report, tool) => {
  const section = sqlSection(raw);
  checkStatement(section, [], report, tool.operationClass === 'read_only');
  if (section.status_query !== null) checkStatement(section.status_query, ['status_query'], report, true);
  if (tool.operationClass === 'conditional_write' && section.status_query === null) {
    report(['status_query'], 'a conditional_write needs a status_query: after an unknown outcome it decides whether the write may be sent again');
  }
  if (section.tls === 'disable' && !LOOPBACK.has(section.host)) {
    report(['tls'], `the password would cross the network to ${section.host} in clear; use require or verify-full`);
  }
  if (tool.operationClass !== 'conditional_write' && section.status_query !== null) {
    report(['status_query'], `only a conditional_write has a status query (this tool is ${tool.operationClass ?? 'of no class'})`);
  }
};

/** The section with its defaults; only for a section the check passed. */
export function sqlSection(raw: Readonly<Record<string, unknown>>): SqlSection {
  const query = raw['status_query'] as Record<string, unknown> | undefined;
  return {
    host: raw['host'] as string,
    port: raw['port'] as number,
    database: raw['database'] as string,
    user: raw['user'] as string,
    statement: raw['statement'] as string,
    parameters: (raw['parameters'] as unknown[] | undefined) ?? [],
    expect_rows: (raw['expect_rows'] as number | undefined) ?? null,
    tls: (raw['tls'] as SqlSection['tls'] | undefined) ?? (LOOPBACK.has(String(raw['host'])) ? 'disable' : 'verify-full'),
    tls_ca: (raw['tls_ca'] as string | undefined) ?? null,
    status_query:
      query === undefined
        ? null
        : { statement: query['statement'] as string, parameters: (query['parameters'] as unknown[] | undefined) ?? [], column: query['column'] as string, equals: query['equals'] },
  };
}
