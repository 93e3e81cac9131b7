import { Ajv, type ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';

export type { ValidateFunction };

/** Common string formats, checked loosely: enough to catch a wrong kind of value, not a full RFC parser. */
const FORMATS: Readonly<Record<string, RegExp>> = {
  'date-time': /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  time: /^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$/,
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  uri: /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/,
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  ipv4: /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/,
  hostname: /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/,
};

export const SUPPORTED_FORMATS = Object.keys(FORMATS);

/**
 * The dialect a schema declares: JSON Schema 2020-12 (MCP's default, and any schema that names no other), or draft-07,
 * which servers on the v1 SDK declare for every tool (`"$schema": "http://json-schema.org/draft-07/schema#"`): it is
 * checked against its own meta-schema and compiled as draft-07, the schema kept as the server gave it.
 */
export type SchemaDialect = '2020-12' | 'draft-07';

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

export function dialectOf(schema: object): SchemaDialect {
  const declared = (schema as { $schema?: unknown }).$schema;
  return typeof declared === 'string' && DRAFT_07.test(declared) ? 'draft-07' : '2020-12';
}

function newAjv(validateSchema: boolean, dialect: SchemaDialect): Ajv {
  const options = {
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    validateSchema,
    logger: false,
  } as const;
  const ajv = dialect === 'draft-07' ? new Ajv(options) : new Ajv2020(options);
  for (const [name, pattern] of Object.entries(FORMATS)) ajv.addFormat(name, pattern);
  // `$anchor` is a core keyword of 2020-12, and ajv resolves anchors itself, but its strict mode calls it unknown
  // in a subschema it compiles for a `$ref` (ajv 8.20): declared, it is accepted there too, and still resolves.
  ajv.addKeyword({ keyword: '$anchor', schemaType: 'string' });
  return ajv;
}

const metaCheckers = new Map<SchemaDialect, Ajv>();

/**
 * The one validator per dialect that checks a schema against its meta-schema (`validateSchema`): it compiles the
 * meta-schema once per process — a fresh instance compiles it again, a fifth of a second each — and holds no
 * schema of its own.
 */
export function schemaChecker(schema: object = {}): Ajv {
  const dialect = dialectOf(schema);
  let checker = metaCheckers.get(dialect);
  if (checker === undefined) metaCheckers.set(dialect, (checker = newAjv(true, dialect)));
  return checker;
}

/**
 * A fresh validator of the schema's dialect (2020-12 unless it declares draft-07) for a schema {@link schemaChecker}
 * accepted: strict about unknown keywords and formats so that a typo in a schema is an error rather than a silently
 * ignored constraint; all errors collected. One instance per schema, so schemas with the same `$id` never collide.
 */
export function createSchemaAjv(schema: object = {}): Ajv {
  return newAjv(false, dialectOf(schema));
}

/** The validator per dialect that compiles the argument schemas which name nothing (see {@link compileArgumentSchema}). */
const argumentCompilers = new Map<SchemaDialect, Ajv>();

/**
 * Whether a schema names itself or a part of itself (`$id`, `$anchor`, `$dynamicAnchor`) anywhere: such a schema
 * needs an Ajv instance of its own, where another schema's names cannot meet its own.
 */
export function namesItself(schema: object): boolean {
  return /"\$(id|anchor|dynamicAnchor)"/.test(JSON.stringify(schema));
}

/**
 * Compiles an argument validator; throws ajv's error for a schema it cannot compile or that breaks the meta-schema.
 * A schema that names nothing is compiled by one validator per dialect, then taken out of it (the function compiled
 * keeps what it needs): a fresh instance for each cost every tool of a contract about 10 ms more. A schema that
 * names itself or a part of itself gets a fresh instance ({@link createSchemaAjv}), so that two tools' names never meet.
 */
export function compileArgumentSchema(schema: object): ValidateFunction {
  const checker = schemaChecker(schema);
  if (!checker.validateSchema(schema)) throw new Error(`schema is invalid: ${checker.errorsText(checker.errors)}`);
  if (namesItself(schema)) return createSchemaAjv(schema).compile(schema);
  const dialect = dialectOf(schema);
  let compiler = argumentCompilers.get(dialect);
  if (compiler === undefined) argumentCompilers.set(dialect, (compiler = newAjv(false, dialect)));
  try {
    return compiler.compile(schema);
  } finally {
    compiler.removeSchema(schema);
  }
}
