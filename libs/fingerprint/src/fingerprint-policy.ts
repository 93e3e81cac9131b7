import { toJsonValue, type JsonObject, type JsonValue } from './canonical-json';
import { FingerprintPolicyError } from './errors';

/**
 * What a tool contract says about fingerprinting its arguments (docs/design.md sections 2 and 7). The
 * contracts library produces exactly this shape.
 *
 * Keys are argument paths: a top-level argument name (`region`) or a dotted path into nested objects
 * (`options.dry_run`). Paths cannot reach into arrays, nor name a key that contains a dot.
 */
export interface FingerprintPolicy {
  /** Values filled in where the argument is absent, so writing a default or omitting it is the same intent. */
  readonly defaults: Readonly<Record<string, unknown>>;
  /** Arguments removed from the record: they do not change what the call does (a trace label, a timeout). */
  readonly exclude: readonly string[];
  /** Arguments replaced by `hmac-sha256:<argument-key-id>:<hex>` before canonicalisation. */
  readonly secret: readonly string[];
}

/** A policy with nothing to fill in, exclude or hide. */
export const EMPTY_FINGERPRINT_POLICY: FingerprintPolicy = Object.freeze({
  defaults: Object.freeze({}),
  exclude: Object.freeze([]),
  secret: Object.freeze([]),
});

type MutableObject = Record<string, JsonValue>;

interface CheckedPolicy {
  /** Shallowest first, so a default for `options` is in place before one for `options.dry_run`. */
  readonly defaults: readonly { readonly path: readonly string[]; readonly value: JsonValue }[];
  readonly exclude: readonly (readonly string[])[];
  /** Deepest first, so `auth.token` is hidden before a secret `auth` hides the whole object. */
  readonly secret: readonly (readonly string[])[];
}

/**
 * Checks a policy on its own, as a contract loader does when it reads a contract: every path well
 * formed, no path both excluded and secret, every default plain JSON.
 *
 * @throws FingerprintPolicyError naming the path
 * @throws NonJsonValueError for a default that is not JSON (path `defaults.<path>`)
 */
export function checkFingerprintPolicy(policy: FingerprintPolicy): void {
  checkPolicy(policy);
}

/**
 * Applies `policy` to `args` in this order: fill defaults, remove excluded arguments, replace secret
 * arguments with `hideSecret(value)`. `args` must be a fresh copy owned by the caller (it is changed
 * in place); the policy is never changed.
 *
 * A default is filled in when the argument is absent (an explicit `null` is a value); missing objects
 * on its path are created. An excluded or secret path whose argument is absent does nothing. A default
 * or secret path that runs through a present argument that is not an object is refused: for a secret
 * that is the safe side, as the raw value would otherwise enter the record.
 */
export function applyFingerprintPolicy(
  args: MutableObject,
  policy: FingerprintPolicy,
  hideSecret: (value: JsonValue) => string,
): void {
  const checked = checkPolicy(policy);
  for (const { path, value } of checked.defaults) {
    const parent = parentOf(args, path, { create: true, strict: true });
    const name = path[path.length - 1]!;
    if (parent !== undefined && !Object.hasOwn(parent, name)) setOwn(parent, name, toJsonValue(value));
  }
  for (const path of checked.exclude) {
    const parent = parentOf(args, path, { create: false, strict: false });
    if (parent !== undefined) delete parent[path[path.length - 1]!];
  }
  for (const path of checked.secret) {
    const parent = parentOf(args, path, { create: false, strict: true });
    const name = path[path.length - 1]!;
    if (parent !== undefined && Object.hasOwn(parent, name)) setOwn(parent, name, hideSecret(parent[name]!));
  }
}

function checkPolicy(policy: FingerprintPolicy): CheckedPolicy {
  const defaults = Object.entries(policy.defaults).map(([path, value]) => ({
    path: splitPath(path),
    value: toJsonValue(value, `defaults.${path}`),
  }));
  const exclude = policy.exclude.map(splitPath);
  const secret = policy.secret.map(splitPath);
  const excluded = new Set(policy.exclude);
  for (const path of policy.secret) {
    if (excluded.has(path)) throw new FingerprintPolicyError(path, 'excluded_and_secret');
  }
  // Sorting by depth, then by path text, keeps the result independent of the order the contract lists them.
  const byDepth = (a: readonly string[], b: readonly string[]) =>
    a.length - b.length || compareText(a.join('.'), b.join('.'));
  return {
    defaults: [...defaults].sort((a, b) => byDepth(a.path, b.path)),
    exclude,
    secret: [...secret].sort((a, b) => byDepth(b, a)),
  };
}

function splitPath(path: string): readonly string[] {
  const segments = typeof path === 'string' ? path.split('.') : [];
  if (segments.length === 0 || segments.some((segment) => segment === '')) {
    throw new FingerprintPolicyError(String(path), 'invalid_path');
  }
  return segments;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The object that holds the last segment of `path`, or undefined when an object on the way is absent
 * (and not created) or, when not strict, is not an object.
 */
function parentOf(
  args: MutableObject,
  path: readonly string[],
  options: { readonly create: boolean; readonly strict: boolean },
): MutableObject | undefined {
  let current = args;
  for (const segment of path.slice(0, -1)) {
    if (!Object.hasOwn(current, segment)) {
      if (!options.create) return undefined;
      setOwn(current, segment, {});
    }
    const next = current[segment];
    if (!isObject(next)) {
      if (options.strict) throw new FingerprintPolicyError(path.join('.'), 'path_through_non_object');
      return undefined;
    }
    current = next as MutableObject;
  }
  return current;
}

// defineProperty, not assignment: a `__proto__` key must stay a data property.
function setOwn(target: MutableObject, key: string, value: JsonValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
