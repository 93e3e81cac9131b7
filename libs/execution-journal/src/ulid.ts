import { randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const pool = Buffer.alloc(4096);
let offset = pool.length;

function randomBytes10(): Buffer {
  if (offset + 10 > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 10);
  offset += 10;
  return bytes;
}

/**
 * A ULID (48-bit millisecond time, 80 random bits, Crockford base32), drawing randomness from a pooled
 * buffer: one system call per ~400 ids instead of one per character.
 */
export function newUlid(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i += 1) {
    time = CROCKFORD[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes10();
  let random = '';
  // 80 bits = 16 characters of 5 bits, read from two 40-bit halves.
  for (const half of [bytes.subarray(0, 5), bytes.subarray(5, 10)]) {
    let value = 0n;
    for (const byte of half) value = (value << 8n) | BigInt(byte);
    for (let i = 7; i >= 0; i -= 1) random += CROCKFORD[Number((value >> BigInt(i * 5)) & 31n)]!;
  }
  return time + random;
}
