import type { JsonSchemaObject } from './tool-contract';

type SchemaRecord = Record<string, unknown>;

function isRecord(value: unknown): value is SchemaRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function propertiesOf(schema: unknown): SchemaRecord | undefined {
  if (!isRecord(schema)) return undefined;
  const properties = schema['properties'];
  return isRecord(properties) ? properties : undefined;
}

/**
 * The arguments an input schema declares, by top-level name or dotted path through nested `properties`
 * (`options.dry_run`). Arguments reached only through `$ref`, `allOf` and the like are not indexed.
 */
export class ArgumentIndex {
  constructor(private readonly schema: JsonSchemaObject) {}

  /** The schema of the argument at a dotted path, or `undefined` when it is not declared. */
  schemaOf(path: string): SchemaRecord | undefined {
    let current: unknown = this.schema;
    for (const segment of path.split('.')) {
      const next = propertiesOf(current)?.[segment];
      if (!isRecord(next)) return undefined;
      current = next;
    }
    return current as SchemaRecord;
  }

  has(path: string): boolean {
    return this.schemaOf(path) !== undefined;
  }

  topLevelNames(): string[] {
    return Object.keys(propertiesOf(this.schema) ?? {});
  }

  /** Declared `default` values by dotted path, nested object properties included. */
  defaults(): Record<string, unknown> {
    const found: Record<string, unknown> = {};
    const walk = (schema: unknown, prefix: string): void => {
      for (const [name, property] of Object.entries(propertiesOf(schema) ?? {})) {
        const path = prefix === '' ? name : `${prefix}.${name}`;
        if (isRecord(property) && 'default' in property) found[path] = property['default'];
        walk(property, path);
      }
    };
    walk(this.schema, '');
    return found;
  }
}
