import Ajv2020 from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Node } from 'yaml';
import type { ContractIssue } from './contract-issue';
import { closestMatch, didYouMean } from './suggest';
import { childPath, keyNodeAt, nodeAt, type YamlContext } from './yaml-reader';

/** A step into a YAML document: a mapping's key or a list's index. */
export type Segment = string | number;

/**
 * The messages a loader gives beyond the schema's own, keyed by the field's shape: its YAML path with list indices
 * written `[]` (`tools[].http`, `listen`, `` for the root). Each returns a whole reason, or `undefined` for the usual one.
 */
export interface SchemaMessages {
  /** For a field the schema does not know at `shape`, e.g. where it belongs instead. */
  readonly unknownField?: (shape: string, name: string) => string | undefined;
  /** For a required field missing at `shape`, e.g. what it should hold. */
  readonly requiredField?: (shape: string, name: string) => string | undefined;
  /** For a value the schema refuses at `shape`. */
  readonly invalidValue?: (shape: string, value: unknown) => string | undefined;
  /**
   * `list`: a scalar of a list is named by the list's path (`listen.allowed_hosts`), at the item's position;
   * `indexed` (the default): by its own (`tools[0].secret_arguments[1]`).
   */
  readonly listItemPaths?: 'indexed' | 'list';
}

/** Keywords of the published schemas beyond JSON Schema: the reasons an editor shows, and the loaders too. */
const MESSAGE_KEYWORDS = ['patternErrorMessage', 'errorMessage'];

/**
 * The validator of the published configuration schemas (schemas/*.schema.json): every error collected, with the schema
 * and the value it concerns (`verbose`), which the translation below needs. `code` is for tools/config-schemas, which
 * compiles the schemas ahead of time (schemas/*.validate.mjs) so that no process compiles them when it starts.
 */
export function fileSchemaAjv(code?: { source: true; esm: true }): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true, logger: false, ...(code === undefined ? {} : { code }) });
  ajv.addVocabulary(MESSAGE_KEYWORDS);
  return ajv;
}

/** Compiles a published configuration schema at run time, as schemas/*.validate.mjs holds it compiled ahead. */
export function compileFileSchema(schema: object): ValidateFunction {
  return fileSchemaAjv().compile(schema);
}

type SchemaNode = Readonly<Record<string, unknown>>;

/** `the string 'x'`, `the number 3`, `a list`…: what a message says was found. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `the string '${value}'`;
  if (typeof value === 'number') return `the number ${value}`;
  if (typeof value === 'boolean') return `the boolean ${value}`;
  return 'an unsupported value';
}

/** The value as a message starts with it: a string quoted, anything else described. */
function shown(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : describeValue(value);
}

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
 * A reason written in a schema (`errorMessage`, `patternErrorMessage`) as the project prints it: one that starts
 * with "Not" names the value first (`'soon' is not a duration; …`), one that starts with "Must be" says what was
 * found (`must be a size …, got the string '1GB'`), any other is printed as written, lower-cased.
 */
export function schemaReason(message: string, value: unknown): string {
  if (/^Not /.test(message)) return `${shown(value)} is n${message.slice(1)}`;
  const lowered = message.charAt(0).toLowerCase() + message.slice(1);
  return /^Must be /.test(message) ? `${lowered}, got ${describeValue(value)}` : lowered;
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function hint(value: unknown, candidates: readonly string[]): string {
  return typeof value === 'string' && candidates.length > 0 ? didYouMean(value, candidates) : '';
}

/** An error of the duration text's schema (`DurationText` in yaml-values.ts): a bare number there is a duration without its unit. */
function isDurationError(error: ErrorObject): boolean {
  const message = (error.parentSchema as SchemaNode | undefined)?.['patternErrorMessage'];
  return typeof message === 'string' && message.startsWith('Not a duration');
}

/** The reason for the errors of one location that are about its value (not unknown or missing fields). */
function valueReason(errors: readonly ErrorObject[], value: unknown): string {
  // ajv reports a failed anyOf after its branches: the last one is the outermost, whose message covers them all.
  const composite = errors.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf').at(-1);
  if (composite !== undefined) {
    const schema = composite.parentSchema as SchemaNode;
    const message = typeof schema['errorMessage'] === 'string' ? schema['errorMessage'] : 'Not an allowed value here';
    const unit = typeof value === 'number' && errors.some(isDurationError) ? ` — durations need a unit, e.g. '${value}s'` : '';
    return `${schemaReason(message, value)}${hint(value, stringsOf(schema['examples']))}${unit}`;
  }
  // An enum's own message says more than its type's (`the number 3 is not allowed; expected one of: …`).
  const error = errors.find((candidate) => candidate.keyword === 'enum' || candidate.keyword === 'const') ?? errors.find((candidate) => candidate.keyword === 'type') ?? errors[0]!;
  if (error.keyword === 'type') {
    const expected = String((error.params as { type: string | string[] }).type).split(',');
    return `must be ${expected.map((name) => TYPE_NAMES[name] ?? name).join(' or ')}, got ${describeValue(value)}`;
  }
  const schema = (error.parentSchema ?? {}) as SchemaNode;
  const written = error.keyword === 'pattern' ? (schema['patternErrorMessage'] ?? schema['errorMessage']) : schema['errorMessage'];
  if (error.keyword === 'enum' || error.keyword === 'const') {
    const allowed = error.keyword === 'enum' ? (schema['enum'] as unknown[]) : [schema['const']];
    const candidates = stringsOf(allowed);
    if (typeof written === 'string') return `${schemaReason(written, value)}${hint(value, candidates)}`;
    return `${shown(value)} is not allowed; expected one of: ${allowed.map(String).join(', ')}${hint(value, candidates)}`;
  }
  if (typeof written === 'string') return `${schemaReason(written, value)}${hint(value, stringsOf(schema['examples']))}`;
  const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
  switch (error.keyword) {
    case 'minimum':
    case 'maximum':
      if (minimum !== undefined && maximum !== undefined) return `must be between ${minimum} and ${maximum}, got ${String(value)}`;
      return minimum !== undefined ? `must be at least ${minimum}, got ${String(value)}` : `must be at most ${maximum}, got ${String(value)}`;
    case 'minLength':
    case 'minItems':
      return 'must not be empty';
    case 'pattern':
      return `${shown(value)} does not match ${String(schema['pattern'])}`;
    default:
      return error.message ?? error.keyword;
  }
}

/** `tools[].http` for `tools[0].http`: the key of a loader's messages. */
function shapeOf(segments: readonly Segment[]): string {
  return segments.reduce<string>((path, segment) => (typeof segment === 'number' ? `${path}[]` : childPath(path, segment)), '');
}

function pathOf(segments: readonly Segment[]): string {
  return segments.reduce<string>((path, segment) => childPath(path, segment), '');
}

function pointerOf(segments: readonly Segment[]): string {
  return segments.map((segment) => `/${String(segment).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function segmentsOf(pointer: string, value: unknown): Segment[] {
  const segments: Segment[] = [];
  let current = value;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    const step: Segment = Array.isArray(current) && /^\d+$/.test(segment) ? Number(segment) : segment;
    segments.push(step);
    current = typeof current === 'object' && current !== null ? (current as Record<string, unknown>)[String(step)] : undefined;
  }
  return segments;
}

function valueAt(value: unknown, segments: readonly Segment[]): unknown {
  let current = value;
  for (const segment of segments) current = typeof current === 'object' && current !== null ? (current as Record<string, unknown>)[String(segment)] : undefined;
  return current;
}

interface Located {
  readonly segments: Segment[];
  readonly errors: ErrorObject[];
}

/**
 * A YAML document checked against a published schema: every error of the schema is an issue of `ctx` at the line
 * and column of its node, with its path and a reason in the project's words (one place for the translation of
 * ajv's keywords). The checks a schema cannot express run afterwards on `value`, each only where `ok` says the
 * schema found nothing wrong, so one pass reports every problem once.
 */
export class SchemaCheckedYaml<T> {
  readonly value: T;
  /** The issues about fields the schema does not know: a loader may list them first, since a typo explains the rest. */
  readonly unknownFields: ContractIssue[] = [];
  private readonly invalid: string[] = [];

  constructor(
    readonly ctx: YamlContext,
    readonly root: Node,
    validate: ValidateFunction,
    private readonly messages: SchemaMessages = {},
  ) {
    this.value = ctx.toJS(root) as T;
    if (!validate(this.value)) this.translate(validate.errors ?? []);
  }

  /** True when the schema found nothing wrong at, above or below each location. */
  ok(...locations: readonly (readonly Segment[])[]): boolean {
    return locations.every((segments) => {
      const pointer = pointerOf(segments);
      return !this.invalid.some((bad) => bad === pointer || bad.startsWith(`${pointer}/`) || pointer.startsWith(`${bad}/`) || bad === '');
    });
  }

  /** The value at a location, when the schema found nothing wrong there (`undefined` otherwise, or when absent). */
  valid<V = unknown>(segments: readonly Segment[]): V | undefined {
    return this.ok(segments) ? (valueAt(this.value, segments) as V | undefined) : undefined;
  }

  /** The node of the value at a location (or its key's, when the value is empty), and its YAML path. */
  where(segments: readonly Segment[]): { node: Node; path: string } {
    return { node: nodeAt(this.ctx, this.root, segments), path: pathOf(segments) };
  }

  /** The node of the key of a field at a location (`undefined` for a list item or the root). */
  keyOf(segments: readonly Segment[]): Node | undefined {
    return keyNodeAt(this.ctx, this.root, segments);
  }

  /** Reports a problem at the value of a location. */
  report(segments: readonly Segment[], reason: string): void {
    const { node, path } = this.where(segments);
    this.ctx.report(node, path, reason);
  }

  /**
   * Takes back what the schema reported at or below a location: a field that must not be there at all is named
   * once, not picked apart.
   */
  withdraw(segments: readonly Segment[]): void {
    const path = pathOf(segments);
    const below = (issuePath: string) => issuePath === path || issuePath.startsWith(`${path}.`) || issuePath.startsWith(`${path}[`);
    const kept = this.ctx.issues.filter((issue) => !below(issue.path));
    this.ctx.issues.splice(0, this.ctx.issues.length, ...kept);
  }

  /** Reports a problem at the key of a location (a field that must not be there). */
  reportKey(segments: readonly Segment[], reason: string): void {
    this.ctx.report(keyNodeAt(this.ctx, this.root, segments) ?? nodeAt(this.ctx, this.root, segments), pathOf(segments), reason);
  }

  private translate(errors: readonly ErrorObject[]): void {
    const located = new Map<string, Located>();
    const add = (segments: Segment[], error: ErrorObject) => {
      const key = `${error.keyword === 'additionalProperties' ? 'unknown' : error.keyword === 'required' ? 'missing' : 'value'}:${pointerOf(segments)}`;
      const entry = located.get(key) ?? { segments, errors: [] };
      entry.errors.push(error);
      located.set(key, entry);
    };
    for (const error of errors) {
      const at = segmentsOf(error.instancePath, this.value);
      if (error.keyword === 'additionalProperties') add([...at, (error.params as { additionalProperty: string }).additionalProperty], error);
      else if (error.keyword === 'required') add([...at, (error.params as { missingProperty: string }).missingProperty], error);
      else add(at, error);
    }
    // Unknown fields first: a known field taken for one's typo is not also reported missing.
    const misspelled = new Set<string>();
    for (const [key, { segments, errors: [error] }] of located) {
      if (!key.startsWith('unknown:') || error === undefined) continue;
      const name = String(segments.at(-1));
      const parent = segments.slice(0, -1);
      const known = Object.keys(((error.parentSchema as SchemaNode)['properties'] ?? {}) as object);
      const written = this.messages.unknownField?.(shapeOf(parent), name);
      const match = written === undefined ? closestMatch(name, known) : undefined;
      if (match !== undefined) misspelled.add(pointerOf([...parent, match]));
      this.invalid.push(pointerOf(segments));
      this.reportKey(segments, written ?? `unknown field '${name}'${match === undefined ? '' : ` — did you mean '${match}'?`}`);
      this.unknownFields.push(this.ctx.issues.at(-1)!);
    }
    for (const [key, { segments, errors }] of located) {
      if (key.startsWith('unknown:')) continue;
      const pointer = pointerOf(segments);
      this.invalid.push(pointer);
      if (key.startsWith('missing:')) {
        if (misspelled.has(pointer)) continue;
        const name = String(segments.at(-1));
        const parent = segments.slice(0, -1);
        this.ctx.report(nodeAt(this.ctx, this.root, parent), pathOf(segments), this.messages.requiredField?.(shapeOf(parent), name) ?? `missing required field '${name}'`);
        continue;
      }
      const value = valueAt(this.value, segments);
      const reason = this.messages.invalidValue?.(shapeOf(segments), value) ?? valueReason(errors, value);
      const itemOfList = this.messages.listItemPaths === 'list' && typeof segments.at(-1) === 'number' && (typeof value !== 'object' || value === null);
      this.ctx.report(nodeAt(this.ctx, this.root, segments), pathOf(itemOfList ? segments.slice(0, -1) : segments), reason);
    }
  }
}
