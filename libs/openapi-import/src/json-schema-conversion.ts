import { INPUT_SCHEMA_KEYWORDS, SUPPORTED_FORMATS } from '@oncegate/contracts';
import type { OpenApiVersion } from './openapi-document';

type Json = Record<string, unknown>;

/** Keywords whose value is one subschema. */
const SCHEMA_VALUED = new Set(['items', 'contains', 'unevaluatedItems', 'additionalProperties', 'propertyNames', 'unevaluatedProperties', 'not', 'if', 'then', 'else', 'contentSchema']);
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAP_VALUED = new Set(['properties', 'patternProperties', 'dependentSchemas']);
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LIST_VALUED = new Set(['prefixItems', 'allOf', 'anyOf', 'oneOf']);
/**
 * Left out without a word: documentation for other tools (`xml`, `externalDocs`), and identifiers and definitions
 * that only served `$ref`s the parser has already resolved (an `$id` kept would move the base of the `$ref`s this
 * conversion writes).
 */
const SILENTLY_DROPPED = new Set(['xml', 'externalDocs', '$schema', '$id', '$anchor', '$dynamicAnchor', '$dynamicRef', '$vocabulary', '$comment', '$defs', 'definitions']);
const KNOWN = new Set<string>(INPUT_SCHEMA_KEYWORDS);
const FORMATS = new Set(SUPPORTED_FORMATS);

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON pointer segment unescaped (`~1` → `/`, `~0` → `~`). */
function unescapePointer(segment: string): string {
  return decodeURIComponent(segment).replaceAll('~1', '/').replaceAll('~0', '~');
}

/**
 * Converts the schemas of one operation to JSON Schema 2020-12 as a contract's `input_schema` takes it (the MCP
 * dialect, checked strictly: known keywords and formats only), and remembers what it had to leave out.
 *
 * - OpenAPI 3.0: `nullable: true` adds `null` to `type` (and to `enum`), or allows `null` beside a composition;
 *   boolean `exclusiveMinimum`/`exclusiveMaximum` become the numeric ones; `example` becomes `examples`.
 * - Both: `x-` extensions, `xml`, `externalDocs` and `discriminator` are left out; so are formats and keywords the
 *   contract's check does not know, and patterns that are not valid regular expressions in Unicode mode (how
 *   the gateway compiles them), each listed.
 * - A request body leaves out `readOnly` properties (the server sets them; OpenAPI says a client does not send them).
 * - A `$ref` the parser left in place (a schema that contains itself) becomes `$ref: '#/$defs/<name>'`, its target
 *   converted once into `defs()`, to be put at the top of the input schema.
 */
export class SchemaConverter {
  private readonly defsByPointer = new Map<string, { readonly name: string; schema: unknown }>();
  private readonly droppedKeywords = new Set<string>();
  private readonly droppedFormats = new Set<string>();
  private readonly droppedPatterns = new Set<string>();
  private readonly readOnlyLeftOut = new Set<string>();
  private readonly unresolved = new Set<string>();
  private discriminator = false;

  constructor(
    private readonly version: OpenApiVersion,
    /** The dereferenced document, where a `$ref` left in place points. */
    private readonly document: unknown,
  ) {}

  /** `schema` as JSON Schema 2020-12; `request` for a request body (its read-only properties are left out). */
  convert(schema: unknown, request: boolean): unknown {
    return this.convertAt(schema, request, '');
  }

  /** The subschemas `$ref: '#/$defs/<name>'` points to, or `undefined` when none was needed. */
  defs(): Json | undefined {
    if (this.defsByPointer.size === 0) return undefined;
    return Object.fromEntries([...this.defsByPointer.values()].map(({ name, schema }) => [name, schema]));
  }

  /** What was left out, one line each, for the notes at the tool. */
  notes(): string[] {
    const notes: string[] = [];
    const list = (names: Set<string>) => [...names].map((name) => `'${name}'`).join(', ');
    if (this.droppedFormats.size > 0) notes.push(`formats the contract does not check, left out of the schema: ${list(this.droppedFormats)}`);
    if (this.droppedKeywords.size > 0) notes.push(`schema keywords left out (not JSON Schema 2020-12): ${list(this.droppedKeywords)}`);
    if (this.droppedPatterns.size > 0) notes.push(`patterns left out (not valid regular expressions in Unicode mode, as the gateway compiles them): ${list(this.droppedPatterns)}`);
    if (this.discriminator) notes.push("'discriminator' left out: the oneOf/anyOf it annotates still decides which schema a value matches");
    if (this.readOnlyLeftOut.size > 0) notes.push(`read-only properties left out of the request body (the server sets them): ${list(this.readOnlyLeftOut)}`);
    if (this.unresolved.size > 0) notes.push(`references not followed, any value accepted there: ${list(this.unresolved)}`);
    return notes;
  }

  /** `where`: the property path from the converted schema's root (`owner.tags[]`), for the notes. */
  private convertAt(schema: unknown, request: boolean, where: string): unknown {
    if (typeof schema === 'boolean') return schema;
    if (!isRecord(schema)) return {};
    if (typeof schema['$ref'] === 'string') return this.reference(schema['$ref'], request);
    const result: Json = {};
    for (const [keyword, value] of Object.entries(schema)) {
      if (keyword.startsWith('x-') || SILENTLY_DROPPED.has(keyword)) continue;
      if (keyword === 'discriminator') {
        this.discriminator = true;
        continue;
      }
      if (keyword === 'nullable' && this.version === '3.0') continue; // applied below
      if (keyword === 'example') {
        if (schema['examples'] === undefined) result['examples'] = [value];
        continue;
      }
      if (keyword === 'examples' && !Array.isArray(value)) continue; // 3.0 has no such keyword: someone's extension
      if (this.version === '3.0' && (keyword === 'exclusiveMinimum' || keyword === 'exclusiveMaximum') && typeof value === 'boolean') {
        const bound = keyword === 'exclusiveMinimum' ? 'minimum' : 'maximum';
        if (value && typeof schema[bound] === 'number') result[keyword] = schema[bound];
        continue;
      }
      if ((keyword === 'minimum' || keyword === 'maximum') && this.version === '3.0') {
        const exclusive = schema[keyword === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'];
        if (exclusive === true) continue; // written as the exclusive bound above
      }
      if (keyword === 'format') {
        if (typeof value === 'string' && FORMATS.has(value)) result[keyword] = value;
        else this.droppedFormats.add(String(value));
        continue;
      }
      if (keyword === 'pattern') {
        if (typeof value === 'string' && compiles(value)) result[keyword] = value;
        else this.droppedPatterns.add(String(value));
        continue;
      }
      if (!KNOWN.has(keyword)) {
        this.droppedKeywords.add(keyword);
        continue;
      }
      if (SCHEMA_VALUED.has(keyword)) result[keyword] = this.convertAt(value, request, keyword === 'items' ? `${where}[]` : where);
      else if (SCHEMA_LIST_VALUED.has(keyword) && Array.isArray(value)) result[keyword] = value.map((item) => this.convertAt(item, request, where));
      else if (SCHEMA_MAP_VALUED.has(keyword) && isRecord(value)) result[keyword] = this.convertMap(keyword, value, request, where);
      else result[keyword] = value;
    }
    if (request && Array.isArray(result['required'])) {
      // OpenAPI 3.0: a read-only property's `required` "takes effect on the response only".
      result['required'] = result['required'].filter((name) => typeof name !== 'string' || !isReadOnly(schema, name));
    }
    if (this.version === '3.0' && schema['nullable'] === true) return nullable(result);
    return result;
  }

  private convertMap(keyword: string, value: Json, request: boolean, where: string): Json {
    const converted: Json = {};
    for (const [name, subschema] of Object.entries(value)) {
      // A property the server sets is not the client's to send (OpenAPI: "SHOULD NOT be sent as part of the request").
      const at = keyword === 'properties' ? (where === '' ? name : `${where}.${name}`) : where;
      if (request && keyword === 'properties' && isRecord(subschema) && subschema['readOnly'] === true) {
        this.readOnlyLeftOut.add(at);
        continue;
      }
      converted[name] = this.convertAt(subschema, request, at);
    }
    return converted;
  }

  /** A `$ref` the parser left in place: into `$defs`, converted once (registered first, since it refers to itself). */
  private reference(pointer: string, request: boolean): unknown {
    const known = this.defsByPointer.get(pointer);
    if (known !== undefined) return { $ref: `#/$defs/${escapePointer(known.name)}` };
    const target = pointer.startsWith('#/') ? resolvePointer(this.document, pointer) : undefined;
    if (target === undefined) {
      this.unresolved.add(pointer);
      return {};
    }
    const base = unescapePointer(pointer.split('/').at(-1) ?? 'schema').replace(/[^A-Za-z0-9_.-]+/g, '_') || 'schema';
    const taken = new Set([...this.defsByPointer.values()].map(({ name }) => name));
    let name = base;
    for (let n = 2; taken.has(name); n += 1) name = `${base}_${n}`;
    const entry = { name, schema: {} as unknown };
    this.defsByPointer.set(pointer, entry);
    entry.schema = this.convertAt(target, request, '');
    return { $ref: `#/$defs/${escapePointer(name)}` };
  }
}

function isReadOnly(schema: Json, name: string): boolean {
  const properties = schema['properties'];
  return isRecord(properties) && isRecord(properties[name]) && properties[name]['readOnly'] === true;
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function resolvePointer(document: unknown, pointer: string): unknown {
  let current = document;
  for (const segment of pointer.slice(2).split('/')) {
    if (!isRecord(current) && !Array.isArray(current)) return undefined;
    current = (current as Json)[unescapePointer(segment)];
  }
  return current;
}

/** Does the gateway's validator (ajv, Unicode mode) take this pattern? */
function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}

/** OpenAPI 3.0's `nullable: true` in 2020-12 terms. */
function nullable(schema: Json): Json {
  const type = schema['type'];
  const result: Json = { ...schema };
  if (Array.isArray(result['enum']) && !result['enum'].includes(null)) result['enum'] = [...result['enum'], null];
  if (typeof type === 'string') {
    result['type'] = type === 'null' ? type : [type, 'null'];
    return result;
  }
  if (Array.isArray(type)) {
    if (!type.includes('null')) result['type'] = [...type, 'null'];
    return result;
  }
  // No type of its own: a composition or an enum decides, and null must be allowed beside it.
  if (['allOf', 'anyOf', 'oneOf', '$ref', 'not'].some((keyword) => keyword in schema)) return { anyOf: [schema, { type: 'null' }] };
  return result;
}
