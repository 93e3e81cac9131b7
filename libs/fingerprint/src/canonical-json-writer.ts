/**
 * The one RFC 8785 canonical JSON writer of the workspace (fingerprints, event hashes, seals, the vault's
 * sealed entries): byte-identical to the `canonicalize` package (2.1.0) on every input, quirks
 * included, so nothing computed with the package before changes, but several times faster on the journal
 * verifier's hot path: one string built by `+=` instead of
 * `reduce` closures and template literals, keys sorted only when they are not in order already, and
 * strings/numbers serialised by `JSON.stringify` (the ES number serialisation and JSON string escaping RFC
 * 8785 asks for). `canonical-json-writer.unit.spec.ts` compares the two with fast-check.
 *
 * It checks nothing: `canonicalJson` (canonical-json.ts) checks the value first and is what fingerprints use.
 *
 * Quirks kept from the reference (none of them reachable from `JSON.parse` output):
 * - `NaN` and `±Infinity` throw `Error` at any depth;
 * - an object whose `toJSON` is a function is replaced by its result;
 * - `undefined` and symbols are dropped from objects and become `null` in arrays;
 * - functions (and other values `JSON.stringify` refuses) print as `undefined`, and array holes are skipped
 *   (the reference folds with `reduce`, which visits only present indexes but places commas by index).
 */
export function canonicalJsonUnchecked(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') {
    checkNumber(value);
    return JSON.stringify(value);
  }
  return serializeObject(value);
}

function checkNumber(value: unknown): void {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new Error(Number.isNaN(value) ? 'NaN is not allowed' : 'Infinity is not allowed');
  }
}

/** What the reference's template literals make of a nested value (`${undefined}` is "undefined"). */
function serializeNested(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      checkNumber(value);
      // For a finite number, String() is the ES serialisation JSON.stringify uses (-0 prints "0").
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      return value === null ? 'null' : String(serializeObject(value));
    default:
      // undefined, function, symbol (bigint throws inside JSON.stringify, as in the reference).
      return String(JSON.stringify(value));
  }
}

/** `undefined` only when a `toJSON` returns something JSON cannot hold. */
function serializeObject(object: object): string | undefined {
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (toJSON instanceof Function) return canonicalJsonUnchecked((toJSON as () => unknown).call(object));

  if (Array.isArray(object)) {
    const length = object.length;
    let out = '[';
    for (let i = 0; i < length; i += 1) {
      // `reduce` skips holes; a hole never gets a comma of its own.
      if (!(i in object)) continue;
      if (i !== 0) out += ',';
      const item: unknown = object[i];
      out += item === undefined || typeof item === 'symbol' ? 'null' : serializeNested(item);
    }
    return out + ']';
  }

  const keys = Object.keys(object);
  sortKeys(keys);
  const record = object as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (let i = 0; i < keys.length; i += 1) {
    const key = keys[i]!;
    const item = record[key];
    if (item === undefined || typeof item === 'symbol') continue;
    if (first) first = false;
    else out += ',';
    out += quote(key) + ':' + serializeNested(item);
  }
  return out + '}';
}

/**
 * `canonicalJsonUnchecked({ streamId, revision, id, type, data, metadata, recordedAt })` for the event hash, with the
 * seven keys written in their sorted order directly. Falls back to the general path when a field is not of the
 * type the event interface promises (the output is the same either way).
 */
export function canonicalEventJson(
  streamId: unknown,
  revision: unknown,
  id: unknown,
  type: unknown,
  data: unknown,
  metadata: unknown,
  recordedAt: unknown,
): string | undefined {
  if (
    typeof streamId !== 'string' ||
    typeof revision !== 'number' ||
    !Number.isFinite(revision) ||
    typeof id !== 'string' ||
    typeof type !== 'string' ||
    data === undefined ||
    typeof data === 'symbol' ||
    typeof metadata !== 'object' ||
    metadata === null ||
    typeof recordedAt !== 'string'
  ) {
    return canonicalJsonUnchecked({ streamId, revision, id, type, data, metadata, recordedAt });
  }
  // The fast path: the same text from the native JSON.stringify over copies whose keys are in sorted order.
  const sortedData = sortedForStringify(data, 0);
  const sortedMetadata = sortedData === NOT_PLAIN ? NOT_PLAIN : sortedForStringify(metadata, 0);
  if (sortedData !== NOT_PLAIN && sortedMetadata !== NOT_PLAIN) {
    // A literal with the seven keys in sorted order (none is an array index): JSON.stringify keeps that order.
    return JSON.stringify({ data: sortedData, id, metadata: sortedMetadata, recordedAt, revision, streamId, type });
  }
  return (
    '{"data":' +
    serializeNested(data) +
    ',"id":' +
    quote(id) +
    ',"metadata":' +
    String(serializeObject(metadata)) +
    ',"recordedAt":' +
    quote(recordedAt) +
    ',"revision":' +
    String(revision) +
    ',"streamId":' +
    quote(streamId) +
    ',"type":' +
    quote(type) +
    '}'
  );
}

/**
 * `canonicalJsonUnchecked(value)`, by the native `JSON.stringify` over a copy whose keys are in sorted order when
 * the value is plain JSON (as `JSON.parse` builds it), else by the general path: the output is the same either way.
 */
export function canonicalJsonOfPlain(value: unknown): string | undefined {
  const sorted = sortedForStringify(value, 0);
  return sorted === NOT_PLAIN ? canonicalJsonUnchecked(value) : JSON.stringify(sorted);
}

/** Characters JSON.stringify escapes: quote, backslash, controls, and surrogates (escaped when lone). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify of a string, without the native call when nothing needs escaping (the common case). */
function quote(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : '"' + text + '"';
}

/**
 * `Array.prototype.sort()` order (UTF-16 code units; keys are unique strings): insertion sort, which is
 * linear when the keys are in order already and beats the native sort on the few keys of a JSON object.
 */
function sortKeys(keys: string[]): void {
  const length = keys.length;
  if (length > 32) {
    keys.sort();
    return;
  }
  for (let i = 1; i < length; i += 1) {
    const key = keys[i]!;
    let j = i - 1;
    if (keys[j]! <= key) continue;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j -= 1;
    }
    keys[j + 1] = key;
  }
}

/** `sortedForStringify` met a value whose canonical form `JSON.stringify` might not print. */
const NOT_PLAIN = Symbol('not plain JSON');
const MAX_DEPTH = 64;

/**
 * `value`, or a copy of it in which every object's keys are in `Array.prototype.sort()` order (the input is
 * never changed; an unchanged subtree is shared), such that `JSON.stringify` of it is `canonicalJson(value)`:
 * for plain JSON, the two differ only in key order. `NOT_PLAIN` when the value holds anything else: a
 * non-finite number (the reference throws), a function, symbol, bigint or `undefined` (the reference prints
 * them its own way), an array hole, an object that is not a plain object or array (`toJSON`, class instances),
 * a key that is an array index or starts with a digit (V8 enumerates array-index keys first, whatever the
 * insertion order), `__proto__` (assigning it sets the prototype), or nesting deeper than 64. The caller then
 * takes the general path, which gives the reference's answer in every case.
 */
function sortedForStringify(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : NOT_PLAIN;
    case 'object':
      break;
    default:
      return NOT_PLAIN;
  }
  if (value === null) return value;
  if (depth >= MAX_DEPTH) return NOT_PLAIN;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) return NOT_PLAIN;
    let copy: unknown[] | undefined;
    const length = value.length;
    for (let i = 0; i < length; i += 1) {
      if (!(i in value)) return NOT_PLAIN;
      const item: unknown = value[i];
      const sorted = sortedForStringify(item, depth + 1);
      if (sorted === NOT_PLAIN) return NOT_PLAIN;
      if (sorted !== item) {
        copy ??= value.slice(0, i);
      }
      if (copy !== undefined) copy.push(sorted);
    }
    return copy ?? value;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return NOT_PLAIN;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  const length = keys.length;
  let inOrder = true;
  /** The values to print, once one differs from the object's own (a sorted copy of a nested object). */
  let values: unknown[] | undefined;
  for (let i = 0; i < length; i += 1) {
    const key = keys[i]!;
    const first = key.charCodeAt(0);
    if ((first >= 0x30 && first <= 0x39) || key === '__proto__') return NOT_PLAIN;
    if (i > 0 && keys[i - 1]! > key) inOrder = false;
    const item = record[key];
    const sorted = sortedForStringify(item, depth + 1);
    if (sorted === NOT_PLAIN) return NOT_PLAIN;
    if (sorted !== item && values === undefined) {
      values = new Array<unknown>(length);
      for (let j = 0; j < i; j += 1) values[j] = record[keys[j]!];
    }
    if (values !== undefined) values[i] = sorted;
  }
  if (inOrder && values === undefined) return value;
  if (values === undefined) {
    values = new Array<unknown>(length);
    for (let i = 0; i < length; i += 1) values[i] = record[keys[i]!];
  }
  if (!inOrder) {
    // Insertion sort of the keys (unique), their values alongside: few keys, often nearly in order.
    for (let i = 1; i < length; i += 1) {
      const key = keys[i]!;
      const item = values[i];
      let j = i - 1;
      while (j >= 0 && keys[j]! > key) {
        keys[j + 1] = keys[j]!;
        values[j + 1] = values[j];
        j -= 1;
      }
      keys[j + 1] = key;
      values[j + 1] = item;
    }
  }
  const copy: Record<string, unknown> = {};
  for (let i = 0; i < length; i += 1) copy[keys[i]!] = values[i];
  return copy;
}
