import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

const pool = Buffer.alloc(4096);
let offset = pool.length;

/**
 * `length` random bytes from a pooled buffer: one system call per 4 KiB instead of one per id. The bytes are a view
 * into the pool, valid until the next call; copy them to keep them. For identifiers and nonces, never for keys.
 */
export function pooledRandomBytes(length: number): Uint8Array {
  if (offset + length > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + length);
  offset += length;
  return bytes;
}

/**
 * A new time-ordered id: a UUIDv7 from the `uuid` package, its random part from the pool (74 random bits). Ids made
 * one after the other sort one after the other, so a table keyed by them grows at its end: each insert touches the
 * index's last page instead of a page anywhere in it.
 */
export function newTimeOrderedId(): string {
  return uuidv7({ random: pooledRandomBytes(16) });
}

/**
 * A new event id, time-ordered (`newTimeOrderedId`). Every event gets one, several per tool call; asking the system
 * for 16 bytes each time cost about 2 % of the gateway's busy time under load.
 */
export function newEventId(): string {
  return newTimeOrderedId();
}
