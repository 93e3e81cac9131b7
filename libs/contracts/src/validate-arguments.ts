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

/** Deepest nesting of objects and arrays accepted in arguments: deeper input is refused before any schema runs. */
export const MAX_ARGUMENT_DEPTH = 64;

// In a `u` regular expression a valid surrogate pair is one code point, so this matches only lone halves.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * What no schema can express about arguments as they were parsed from the wire: nesting deeper than
 * `MAX_ARGUMENT_DEPTH`, a lone UTF-16 surrogate in a string or key (it has no UTF-8 form and cannot be
 * fingerprinted), and a key named `__proto__` (most JavaScript copies drop it silently, so the schema would never
 * see it). Empty when none; stops at the first problem of each kind.
 */
export function argumentShapeViolations(args: unknown): ArgumentViolation[] {
  const violations: ArgumentViolation[] = [];
  const seen = new Set<string>();
  const report = (keyword: string, pointer: string, message: string) => {
    if (seen.has(keyword)) return;
    seen.add(keyword);
    violations.push({ pointer, keyword, message });
  };
  const walk = (value: unknown, pointer: string, depth: number): void => {
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) report('lone_surrogate', pointer, 'holds a lone UTF-16 surrogate, which is not valid Unicode');
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    if (depth > MAX_ARGUMENT_DEPTH) {
      report('max_depth', pointer, `is nested deeper than ${MAX_ARGUMENT_DEPTH} levels`);
      return;
    }
    const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((item, index) => [String(index), item]) : Object.entries(value);
    for (const [key, item] of entries) {
      const at = `${pointer}/${escapePointer(key)}`;
      if (!Array.isArray(value)) {
        if (key === '__proto__') report('proto_key', at, 'is not accepted as an argument name');
        if (LONE_SURROGATE.test(key)) report('lone_surrogate', at, 'is a name holding a lone UTF-16 surrogate, which is not valid Unicode');
      }
      walk(item, at, depth + 1);
      if (seen.has('max_depth')) return;
    }
  };
  walk(args, '', 1);
  return violations;
}

/**
 * Checks call arguments against the tool's input schema (compiled once per tool), after the shape checks of
 * `argumentShapeViolations`. Empty when valid. Does not fill defaults or change `args`.
 */
export function validateArguments(tool: ToolContract, args: unknown): readonly ArgumentViolation[] {
  const shape = argumentShapeViolations(args);
  if (shape.length > 0) return shape;
  const validate = validatorOf(tool);
  if (validate(args)) return [];
  return (validate.errors ?? []).map(toViolation);
}

/** Throws `InvalidArgumentsError` unless the arguments match the tool's input schema. */
export function assertValidArguments(tool: ToolContract, args: unknown): void {
  const violations = validateArguments(tool, args);
  if (violations.length > 0) throw new InvalidArgumentsError(tool.name, violations);
}
