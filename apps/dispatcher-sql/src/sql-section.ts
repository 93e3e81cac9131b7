import { scanTemplates, sectionSchema, type PluginSectionCheck } from '@oncegate/dispatcher-kit';
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

const PARAMETERS = { type: 'array', maxItems: 100, items: { type: ['string', 'number', 'boolean', 'null'] } };

const SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['host', 'port', 'database', 'user', 'statement'],
  properties: {
    host: { type: 'string', minLength: 1, pattern: '^[^{}\\s]+$' },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    database: { type: 'string', minLength: 1, pattern: '^[^{}]+$' },
    user: { type: 'string', minLength: 1, pattern: '^[^{}]+$' },
    statement: { type: 'string', minLength: 1 },
    parameters: PARAMETERS,
    expect_rows: { type: 'integer', minimum: 0 },
    tls: { enum: ['disable', 'require', 'verify-full'] },
    tls_ca: { type: 'string', pattern: '^/' },
    status_query: {
      type: 'object',
      additionalProperties: false,
      required: ['statement', 'column', 'equals'],
      properties: { statement: { type: 'string', minLength: 1 }, parameters: PARAMETERS, column: { type: 'string', minLength: 1 }, equals: { type: ['string', 'number', 'boolean', 'null'] } },
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

/** The SQL channel's section check (the kit's `contract.check`). */
export const checkSqlSection: PluginSectionCheck = sectionSchema(SCHEMA, (raw, report, tool) => {
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
});

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
