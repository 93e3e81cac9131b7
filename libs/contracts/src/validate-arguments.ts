import type { ErrorObject } from 'ajv';
import { compileArgumentSchema, type ValidateFunction } from './schema-compiler';
import type { ToolContract } from './tool-contract';

/**
 * One way the arguments of a call break the tool's input schema. It names where, never the offending value:
 * the value may be a secret argument.
 */
export interface ArgumentViolation {
  /** JSON pointer into the arguments (`/options/dry_run`; `""` for the arguments object itself). */
  readonly pointer: string;
  /** The JSON Schema keyword that failed (`type`, `required`, `pattern`, ...). */
  readonly keyword: string;
  readonly message: string;
}

/** The arguments of a call do not match its tool's input schema; nothing was accepted. */
export class InvalidArgumentsError extends Error {
  readonly code = 'invalid_arguments' as const;

  constructor(
    readonly tool: string,
    readonly violations: readonly ArgumentViolation[],
  ) {
    super(`invalid arguments for tool '${tool}': ${violations.map((v) => `${v.pointer || '/'} ${v.message}`).join('; ')}`);
    this.name = 'InvalidArgumentsError';
  }
}

const validators = new WeakMap<ToolContract, ValidateFunction>();

/** Lets the contract parser hand over the validator it already compiled while checking the schema. */
export function rememberArgumentValidator(tool: ToolContract, validator: ValidateFunction): void {
  validators.set(tool, validator);
}

function validatorOf(tool: ToolContract): ValidateFunction {
  let validator = validators.get(tool);
  if (validator === undefined) {
    validator = compileArgumentSchema(tool.inputSchema);
    validators.set(tool, validator);
  }
  return validator;
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

function toViolation(error: ErrorObject): ArgumentViolation {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required' && typeof params['missingProperty'] === 'string') {
    return { pointer: `${error.instancePath}/${escapePointer(params['missingProperty'])}`, keyword: 'required', message: 'is required' };
  }
  if (error.keyword === 'additionalProperties' && typeof params['additionalProperty'] === 'string') {
    return {
      pointer: `${error.instancePath}/${escapePointer(params['additionalProperty'])}`,
      keyword: 'additionalProperties',
      message: 'is not a declared argument',
    };
  }
  const allowed = error.keyword === 'enum' && Array.isArray(params['allowedValues']) ? `: ${params['allowedValues'].map((v) => JSON.stringify(v)).join(', ')}` : '';
  return { pointer: error.instancePath, keyword: error.keyword, message: `${error.message ?? 'is invalid'}${allowed}` };
}

/**
 * Checks call arguments against the tool's input schema (compiled once per tool). Empty when valid.
 * Does not fill defaults or change `args`.
 */
export function validateArguments(tool: ToolContract, args: unknown): readonly ArgumentViolation[] {
  const validate = validatorOf(tool);
  if (validate(args)) return [];
  return (validate.errors ?? []).map(toViolation);
}

/** Throws `InvalidArgumentsError` unless the arguments match the tool's input schema. */
export function assertValidArguments(tool: ToolContract, args: unknown): void {
  const violations = validateArguments(tool, args);
  if (violations.length > 0) throw new InvalidArgumentsError(tool.name, violations);
}
