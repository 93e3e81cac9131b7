import { isMap, isScalar, isSeq, type Node } from 'yaml';
import type { ErrorObject } from 'ajv';
import { ArgumentIndex } from './argument-index';
import { compileArgumentSchema, createSchemaAjv, schemaChecker, type ValidateFunction } from './schema-compiler';
import { didYouMean } from './suggest';
import type { JsonSchemaObject } from './tool-contract';
import { childPath, nodeAt, pathOfSegments, pointerSegments, type YamlContext } from './yaml-reader';

/** JSON Schema 2020-12 keywords (plus draft-07 `definitions`), the ones ajv accepts in strict mode. */
export const KEYWORDS = [
  '$schema', '$id', '$anchor', '$ref', '$dynamicRef', '$dynamicAnchor', '$defs', '$comment', '$vocabulary', 'definitions',
  'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly',
  'type', 'enum', 'const', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'format', 'contentEncoding', 'contentMediaType', 'contentSchema',
  'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains', 'items', 'prefixItems', 'contains', 'unevaluatedItems',
  'maxProperties', 'minProperties', 'required', 'dependentRequired', 'dependentSchemas', 'properties', 'patternProperties',
  'additionalProperties', 'propertyNames', 'unevaluatedProperties',
  'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else',
] as const;

/** Keywords whose value is one subschema. */
const SCHEMA_VALUED = ['items', 'contains', 'unevaluatedItems', 'additionalProperties', 'propertyNames', 'unevaluatedProperties', 'not', 'if', 'then', 'else', 'contentSchema'];
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAP_VALUED = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LIST_VALUED = ['prefixItems', 'allOf', 'anyOf', 'oneOf'];

export interface CheckedInputSchema {
  readonly schema: JsonSchemaObject;
  readonly validator: ValidateFunction;
  readonly index: ArgumentIndex;
}

/**
 * Checks `input_schema` beyond what the file's schema says (a mapping with `type: object`): known keywords only
 * (typos named with a suggestion), valid against the 2020-12 meta-schema, compilable by ajv, argument names free of
 * dots (fingerprint paths are dotted) and defaults valid against their own property schema. Returns `undefined`
 * after reporting problems.
 */
export function checkInputSchema(ctx: YamlContext, node: Node, path: string): CheckedInputSchema | undefined {
  const before = ctx.issues.length;
  const schema = ctx.toJS(node) as Record<string, unknown>;
  checkKeywords(ctx, node, path, true);
  if (ctx.issues.length > before) return undefined;

  const meta = schemaChecker(schema);
  if (!meta.validateSchema(schema)) {
    reportMetaSchemaErrors(ctx, node, path, meta.errors ?? []);
    return undefined;
  }
  let validator: ValidateFunction;
  try {
    validator = compileArgumentSchema(schema);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const pointer = /at path "(#[^"]*)"/.exec(message)?.[1];
    const segments = pointer === undefined ? [] : pointerSegments(pointer);
    ctx.report(nodeAt(ctx, node, segments), pathOfSegments(ctx, path, node, segments), `invalid JSON Schema: ${message}`);
    return undefined;
  }
  const index = new ArgumentIndex(schema);
  checkDefaults(ctx, node, path, schema, index);
  if (ctx.issues.length > before) return undefined;
  return { schema, validator, index };
}

/** Walks schema positions, reporting unknown keywords and argument names containing dots. */
function checkKeywords(ctx: YamlContext, node: Node | null, path: string, argumentLevel: boolean): void {
  const schema = ctx.resolve(node);
  if (!isMap(schema)) return; // `true` / `false` schemas, or a shape the meta-schema check reports
  for (const pair of schema.items) {
    const key = pair.key;
    if (!isScalar(key)) continue;
    const keyword = String(key.value);
    const keywordPath = childPath(path, keyword);
    const value = ctx.resolve(pair.value);
    if (!(KEYWORDS as readonly string[]).includes(keyword)) {
      ctx.report(key, keywordPath, `unknown JSON Schema keyword '${keyword}'${didYouMean(keyword, KEYWORDS)}`);
      continue;
    }
    if (SCHEMA_VALUED.includes(keyword)) checkKeywords(ctx, value, keywordPath, false);
    else if (SCHEMA_MAP_VALUED.includes(keyword) && isMap(value)) {
      for (const entry of value.items) {
        if (!isScalar(entry.key)) continue;
        const name = String(entry.key.value);
        const entryPath = childPath(keywordPath, name);
        const nestedArguments = argumentLevel && keyword === 'properties';
        if (nestedArguments && name.includes('.')) {
          ctx.report(entry.key, entryPath, `argument name '${name}' must not contain '.': fingerprint paths are dotted`);
        }
        checkKeywords(ctx, ctx.resolve(entry.value), entryPath, nestedArguments);
      }
    } else if (SCHEMA_LIST_VALUED.includes(keyword) && isSeq(value)) {
      value.items.forEach((item, position) => checkKeywords(ctx, ctx.resolve(item), childPath(keywordPath, position), false));
    }
  }
}

/** One issue per schema location: an enum error lists the allowed values; anyOf summaries are dropped. */
function reportMetaSchemaErrors(ctx: YamlContext, node: Node, path: string, errors: readonly ErrorObject[]): void {
  const byLocation = new Map<string, ErrorObject[]>();
  for (const error of errors) byLocation.set(error.instancePath, [...(byLocation.get(error.instancePath) ?? []), error]);
  for (const [instancePath, group] of byLocation) {
    const enumError = group.find((error) => error.keyword === 'enum');
    const chosen = enumError ?? group.find((error) => error.keyword !== 'anyOf' && error.keyword !== 'oneOf') ?? group[0];
    if (chosen === undefined) continue;
    const allowed = chosen.keyword === 'enum' ? `: ${(chosen.params as { allowedValues: unknown[] }).allowedValues.join(', ')}` : '';
    const segments = pointerSegments(instancePath);
    const at = nodeAt(ctx, node, segments);
    ctx.report(at, pathOfSegments(ctx, path, node, segments), `invalid JSON Schema: ${chosen.message ?? chosen.keyword}${allowed}`);
  }
}

/** Each declared default must satisfy its own property schema: defaults enter every fingerprint. */
function checkDefaults(ctx: YamlContext, node: Node, path: string, schema: Record<string, unknown>, index: ArgumentIndex): void {
  const defaults = Object.entries(index.defaults());
  if (defaults.length === 0) return;
  const ajv = createSchemaAjv(schema);
  const key = 'oncegate:input-schema';
  ajv.addSchema(schema, key);
  for (const [argument, value] of defaults) {
    const segments = argument.split('.').flatMap((name) => ['properties', name]);
    const pointer = segments.map((segment) => segment.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
    const validate = ajv.getSchema(`${key}#/${pointer}`);
    if (validate === undefined || validate(value)) continue;
    const first = validate.errors?.[0];
    const where = first?.instancePath ? ` at ${first.instancePath}` : '';
    ctx.report(
      nodeAt(ctx, node, [...segments, 'default']),
      pathOfSegments(ctx, path, node, [...segments, 'default']),
      `default of '${argument}' does not match its schema${where}: ${first?.message ?? 'invalid'}`,
    );
  }
}
