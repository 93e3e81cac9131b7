/**
 * JSON-friendly keyed state for projections (checkpoints are JSON, so no Map). Keys such as actor names are free
 * text; reading and writing through own properties keeps a key like `__proto__` an ordinary entry.
 */
export type Table<T> = Record<string, T>;

export function emptyTable<T>(): Table<T> {
  return {};
}

export function getOwn<T>(table: Table<T>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

export function setOwn<T>(table: Table<T>, key: string, value: T): T {
  Object.defineProperty(table, key, { value, enumerable: true, writable: true, configurable: true });
  return value;
}

export function valuesOf<T>(table: Table<T>): T[] {
  return Object.keys(table).map((key) => table[key] as T);
}
