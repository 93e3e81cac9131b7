import Ajv2020 from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';

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

function newAjv(validateSchema: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    validateSchema,
    logger: false,
  });
  for (const [name, pattern] of Object.entries(FORMATS)) ajv.addFormat(name, pattern);
  // `$anchor` is a core keyword of 2020-12, and ajv resolves anchors itself, but its strict mode calls it unknown
  // in a subschema it compiles for a `$ref` (ajv 8.20): declared, it is accepted there too, and still resolves.
  ajv.addKeyword({ keyword: '$anchor', schemaType: 'string' });
  return ajv;
}

let metaChecker: Ajv2020 | undefined;

/**
 * The one validator that checks a schema against the 2020-12 meta-schema (`validateSchema`): it compiles the
 * meta-schema once per process — a fresh instance compiles it again, a fifth of a second each — and holds no
 * schema of its own.
 */
export function schemaChecker(): Ajv2020 {
  return (metaChecker ??= newAjv(true));
}

/**
 * A fresh JSON Schema 2020-12 validator (the MCP default dialect) for a schema {@link schemaChecker} accepted:
 * strict about unknown keywords and formats so that a typo in a schema is an error rather than a silently ignored
 * constraint; all errors collected. One instance per schema, so schemas with the same `$id` never collide.
 */
export function createSchemaAjv(): Ajv2020 {
  return newAjv(false);
}

/** Compiles an argument validator; throws ajv's error for a schema it cannot compile or that breaks the meta-schema. */
export function compileArgumentSchema(schema: object): ValidateFunction {
  const checker = schemaChecker();
  if (!checker.validateSchema(schema)) throw new Error(`schema is invalid: ${checker.errorsText(checker.errors)}`);
  return createSchemaAjv().compile(schema);
}
