import { scanTemplates, type TemplateReference } from '@oncegate/contracts';

/** A template that cannot be filled from the call (an argument it interpolates is absent). */
export class TemplateError extends Error {
  /** `TemplateError`. */
  override readonly name = 'TemplateError';
}

const TEMPLATE = /\{\{(.*?)\}\}/g;

function valueOf(reference: TemplateReference, args: Readonly<Record<string, unknown>>, executionId: string): unknown {
  if (reference.kind === 'execution_id') return executionId;
  let current: unknown = args;
  for (const key of reference.argument.split('.')) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/**
 * Fills one string of a plugin section: a string that is exactly one template (`{{args.amount}}`) is the argument's
 * own JSON value (a number stays a number, an absent argument is `undefined`); any other string has each template
 * replaced by its value as text (the contract check has made sure every template names an argument or the id).
 */
export function templateValue(text: string, args: Readonly<Record<string, unknown>>, executionId: string): unknown {
  const scan = scanTemplates(text);
  if (scan.whole !== undefined) return valueOf(scan.whole, args, executionId);
  if (scan.references.length === 0) return text;
  return text.replace(TEMPLATE, (raw, inner: string) => {
    const [reference] = scanTemplates(`{{${inner}}}`).references;
    const value = reference === undefined ? undefined : valueOf(reference, args, executionId);
    if (value === undefined || value === null) throw new TemplateError(`${raw} has no value in this call`);
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}
