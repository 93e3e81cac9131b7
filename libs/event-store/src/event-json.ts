import { types } from 'node:util';
import { canonicalJsonOfPlain } from '@oncegate/fingerprint';

const { isBoxedPrimitive } = types;

/**
 * An event's data or metadata as the store keeps it, built once when an append is checked: the JSON text stored,
 * the value a reader parses back from it, and that value's RFC 8785 canonical text, which the hash chain covers.
 */
export interface EventJson {
  /** `JSON.stringify` of the appended value. */
  readonly text: string;
  /** What `JSON.parse(text)` gives: fresh plain objects and arrays, never the caller's. */
  readonly value: unknown;
  /** The canonical JSON of `value`. */
  readonly canonical: string;
}

/**
 * `undefined` when `JSON.stringify` gives nothing for the value (a function, a symbol, `undefined`, or a `toJSON`
 * returning one); throws a `TypeError` where it throws (a cycle, a bigint).
 */
export function eventJson(value: unknown): EventJson | undefined {
  const copy = jsonCopy('', value, []);
  if (copy === undefined) return undefined;
  const canonical = canonicalJsonOfPlain(copy);
  // A copy holds only strings, finite numbers, booleans, null, plain arrays and plain objects: it always serialises.
  if (canonical === undefined) throw new TypeError('a JSON value has no canonical form');
  return { text: JSON.stringify(copy), value: copy, canonical };
}

const isRawJson: (value: unknown) => boolean =
  (JSON as unknown as { isRawJSON?: (value: unknown) => boolean }).isRawJSON ?? (() => false);

/**
 * `JSON.parse(JSON.stringify(value))` without the text in between: the steps of the specification's
 * SerializeJSONProperty (`toJSON` called with the key, boxed primitives unwrapped by their internal slot, raw JSON
 * as its text parses, non-finite numbers as null, functions, symbols and `undefined` left out of objects and null
 * in arrays, holes as null, own enumerable string keys in their own order), with the result built as `JSON.parse`
 * builds it (-0 becomes 0, a `__proto__` key stays a key). `undefined` where `JSON.stringify` writes nothing.
 */
function jsonCopy(key: string, value: unknown, stack: object[]): unknown {
  if ((typeof value === 'object' && value !== null) || typeof value === 'bigint') {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, key);
  }
  if (typeof value === 'object' && value !== null) {
    if (isRawJson(value)) return JSON.parse((value as { rawJSON: string }).rawJSON) as unknown;
    if (isBoxedPrimitive(value)) value = unbox(value);
  }
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // String(-0) is "0", which parses to 0.
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object':
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (stack.includes(value)) throw new TypeError('Converting circular structure to JSON');
  stack.push(value);
  try {
    if (Array.isArray(value)) {
      const length = value.length;
      const out: unknown[] = new Array(length);
      for (let i = 0; i < length; i += 1) {
        const item = jsonCopy(String(i), value[i], stack);
        out[i] = item === undefined ? null : item;
      }
      return out;
    }
    const record = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const name of Object.keys(record)) {
      const item = jsonCopy(name, record[name], stack);
      if (item === undefined) continue;
      // An own data property, as JSON.parse defines it: assigning `__proto__` would set the prototype instead.
      if (name === '__proto__') Object.defineProperty(out, name, { value: item, writable: true, enumerable: true, configurable: true });
      else out[name] = item;
    }
    return out;
  } finally {
    stack.pop();
  }
}

/** A boxed primitive as `JSON.stringify` unwraps it: numbers and strings converted, booleans and bigints read. */
function unbox(value: object): unknown {
  if (types.isNumberObject(value)) return Number(value);
  if (types.isStringObject(value)) return String(value);
  if (types.isBooleanObject(value)) return Boolean.prototype.valueOf.call(value);
  if (types.isBigIntObject(value)) return BigInt.prototype.valueOf.call(value);
  return value;
}
