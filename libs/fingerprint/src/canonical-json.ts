import { canonicalJsonUnchecked } from './canonical-json-writer';
import { NonJsonValueError } from './errors';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

// In a `u` regular expression a valid surrogate pair is one code point, so this matches only lone halves.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Checks that `value` is plain JSON and returns a deep copy made of fresh plain objects and arrays,
 * so later steps never mutate or alias the caller's data.
 *
 * Refused (NonJsonValueError naming the path): functions, symbols, bigints, NaN and ±Infinity,
 * `undefined` inside an array (or an array hole), objects that are not plain (Date, Map, Buffer,
 * class instances — their `toJSON` would make the canonical form depend on a runtime type), cycles,
 * and strings or keys holding a lone UTF-16 surrogate (RFC 8785 requires valid Unicode).
 * An object property whose value is `undefined` is absent, as in `JSON.stringify`. A value reached
 * twice without a cycle is copied twice.
 *
 * @param path where `value` sits, used in errors only.
 */
export function toJsonValue(value: unknown, path = '$'): JsonValue {
  return copy(value, { base: path, keys: [] }, new Set());
}

/**
 * Where a value sits: the root's path and the keys and indexes below it, kept as a stack and spelled out only for an
 * error (a path string per value copied was most of what a fingerprint's check allocated).
 */
interface Place {
  readonly base: string;
  readonly keys: (string | number)[];
}

function spelled(place: Place, last?: string): string {
  let path = place.base;
  for (const key of place.keys) path += typeof key === 'number' ? `[${key}]` : `.${key}`;
  return last === undefined ? path : `${path}.${last}`;
}

function copy(value: unknown, place: Place, ancestors: Set<object>): JsonValue {
  switch (typeof value) {
    case 'string':
      if (LONE_SURROGATE.test(value)) throw new NonJsonValueError(spelled(place), 'lone_surrogate');
      return value;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NonJsonValueError(spelled(place), 'non_finite_number');
      return value;
    case 'bigint':
      throw new NonJsonValueError(spelled(place), 'bigint');
    case 'symbol':
      throw new NonJsonValueError(spelled(place), 'symbol');
    case 'function':
      throw new NonJsonValueError(spelled(place), 'function');
    case 'undefined':
      // Reached only for an array element or the whole value: object properties skip undefined.
      throw new NonJsonValueError(spelled(place), 'undefined');
    case 'object':
      break;
  }
  if (value === null) return null;
  if (ancestors.has(value)) throw new NonJsonValueError(spelled(place), 'cycle');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const items: JsonValue[] = [];
      // Index loop, not map: map skips holes, which must be refused like undefined.
      for (let index = 0; index < value.length; index += 1) {
        place.keys.push(index);
        items.push(copy(value[index], place, ancestors));
        place.keys.pop();
      }
      return items;
    }
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) throw new NonJsonValueError(spelled(place), 'non_plain_object');
    const entries: [string, JsonValue][] = [];
    for (const [key, item] of Object.entries(value)) {
      if (LONE_SURROGATE.test(key)) throw new NonJsonValueError(spelled(place, '<key>'), 'lone_surrogate');
      if (item === undefined) continue;
      place.keys.push(key);
      entries.push([key, copy(item, place, ancestors)]);
      place.keys.pop();
    }
    // fromEntries defines own properties, so a `__proto__` key stays data and never reaches the prototype.
    return Object.fromEntries(entries);
  } finally {
    ancestors.delete(value);
  }
}

/**
 * RFC 8785 (JCS) canonical JSON of `value`: keys sorted by UTF-16 code units, no whitespace,
 * numbers in ECMAScript shortest form (1.0 → 1, 1e21 → 1e+21, -0 → 0), strings escaped as
 * `JSON.stringify` does. The value is checked first with the rules of `toJsonValue`, because the
 * writer (`canonicalJsonUnchecked`, byte-identical to the `canonicalize` package) would otherwise
 * turn `undefined` in an array into null, honour `toJSON` and overflow the stack on a cycle.
 */
export function canonicalJson(value: unknown): string {
  const text = canonicalJsonUnchecked(toJsonValue(value));
  // Unreachable after the check above: a checked value always serialises.
  if (text === undefined) throw new NonJsonValueError('$', 'undefined');
  return text;
}
