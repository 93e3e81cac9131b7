import { Ajv, type ErrorObject } from 'ajv';
import { closestMatch, type PluginSectionCheck } from '@oncegate/contracts';

/**
 * A channel's section check from a JSON Schema (draft 2020-12 subset that Ajv reads), followed by `also` for what a
 * schema cannot say. Each violation is reported at its path with a reason in the contract file's words: an unknown
 * field with the nearest known one, a missing field, a wrong type or value.
 */
export function sectionSchema(schema: Record<string, unknown>, also?: PluginSectionCheck): PluginSectionCheck {
  const validate = new Ajv({ allErrors: true, strict: false, verbose: true }).compile(schema);
  return (section, report, tool) => {
    if (!validate(section)) {
      for (const error of validate.errors ?? []) {
        const at = pathOf(error.instancePath);
        const { path, reason } = describe(error, at);
        report(path, reason);
      }
      return;
    }
    also?.(section, report, tool);
  };
}

function pathOf(pointer: string): Array<string | number> {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

function describe(error: ErrorObject, at: Array<string | number>): { path: Array<string | number>; reason: string } {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties': {
      const field = String(params['additionalProperty']);
      const known = Object.keys(((error.parentSchema as { properties?: object } | undefined)?.properties ?? {}) as object);
      const near = closestMatch(field, known);
      return { path: [...at, field], reason: `unknown field '${field}'${near === undefined ? `; known fields: ${known.join(', ')}` : `; did you mean '${near}'?`}` };
    }
    case 'required':
      return { path: [...at, String(params['missingProperty'])], reason: `missing required field '${String(params['missingProperty'])}'` };
    case 'enum':
      return { path: at, reason: `must be one of ${((params['allowedValues'] as unknown[]) ?? []).map((value) => JSON.stringify(value)).join(', ')}` };
    default:
      return { path: at, reason: error.message ?? error.keyword };
  }
}
