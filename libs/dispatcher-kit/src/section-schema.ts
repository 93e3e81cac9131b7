import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { closestMatch, describeValue, namesItself, type PluginSectionCheck } from '@oncegate/contracts';

/** A JSON Schema type as a message names it. */
const TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
  null: 'nothing',
};

/**
 * A channel's section check from a JSON Schema (draft 2020-12 subset that Ajv reads), followed by `also` for what a
 * schema cannot say. Each violation is reported at its path with a reason in the contract file's words: an unknown
 * field with the nearest known one, a missing field, a wrong type or value.
 */
export function sectionSchema(schema: Record<string, unknown>, also?: PluginSectionCheck): PluginSectionCheck {
  const validate = compileChannelSchema(schema);
  return (section, report, tool) => {
    if (!validate(section)) {
      for (const { path, reason } of schemaProblems(validate.errors ?? [])) report(path, reason);
      return;
    }
    also?.(section, report, tool);
  };
}

/** The Ajv instances the channels' schemas of a process are compiled by, one for each set of options. */
const channelAjvs = new Map<boolean, Ajv>();

/**
 * A channel's schema (its contract section's or its options') compiled: all errors, each with its schema (`verbose`),
 * and with `useDefaults` the schema's defaults filled into the value checked. The schemas of every channel share an
 * Ajv instance, which checks a schema against the meta-schema it compiled once: an instance of its own for each
 * schema cost each channel about 15 ms of a process's start. A schema that names itself or a part of itself (`$id`,
 * `$anchor`) gets an instance of its own, so that two channels' names never meet.
 */
export function compileChannelSchema(schema: Record<string, unknown>, options: { readonly useDefaults?: boolean } = {}): ValidateFunction {
  const useDefaults = options.useDefaults === true;
  const create = () => new Ajv({ allErrors: true, strict: false, verbose: true, useDefaults });
  if (namesItself(schema)) return create().compile(schema);
  let ajv = channelAjvs.get(useDefaults);
  if (ajv === undefined) channelAjvs.set(useDefaults, (ajv = create()));
  return ajv.compile(schema);
}

/** One violation of a channel's schema: where (a path inside the value checked) and why; `field` for an unknown field. */
export interface SchemaProblem {
  readonly path: Array<string | number>;
  readonly reason: string;
  readonly field: boolean;
}

/** Ajv's errors (of a validator compiled with `verbose`) in the contract file's words, each at its path. */
export function schemaProblems(errors: readonly ErrorObject[]): SchemaProblem[] {
  return errors.map((error) => describe(error, pathOf(error.instancePath)));
}

function pathOf(pointer: string): Array<string | number> {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

function describe(error: ErrorObject, at: Array<string | number>): SchemaProblem {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties': {
      const field = String(params['additionalProperty']);
      const known = Object.keys(((error.parentSchema as { properties?: object } | undefined)?.properties ?? {}) as object);
      const near = closestMatch(field, known);
      return { path: [...at, field], reason: `unknown field '${field}'${near === undefined ? `; known fields: ${known.join(', ')}` : `; did you mean '${near}'?`}`, field: true };
    }
    case 'required':
      return { path: [...at, String(params['missingProperty'])], reason: `missing required field '${String(params['missingProperty'])}'`, field: false };
    case 'enum':
      return { path: at, reason: `must be one of ${((params['allowedValues'] as unknown[]) ?? []).map((value) => JSON.stringify(value)).join(', ')}`, field: false };
    case 'minimum':
    case 'maximum':
      return { path: at, reason: `must be at ${error.keyword === 'minimum' ? 'least' : 'most'} ${String(params['limit'])}, got ${JSON.stringify(error.data)}`, field: false };
    case 'type': {
      const expected = ([] as string[]).concat(params['type'] as string | string[]).flatMap((type) => String(type).split(','));
      return { path: at, reason: `must be ${expected.map((type) => TYPE_NAMES[type] ?? type).join(' or ')}, got ${describeValue(error.data)}`, field: false };
    }
    default:
      return { path: at, reason: error.message ?? error.keyword, field: false };
  }
}
