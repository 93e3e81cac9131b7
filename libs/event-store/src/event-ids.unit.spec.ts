import { describe, expect, it } from 'vitest';
import { validate, version } from 'uuid';
import { newEventId, pooledRandomBytes } from './event-ids';

describe('event ids from pooled randomness', () => {
  it('given many ids made across several refills of the pool, when they are checked, then each is a valid UUIDv7 and none repeats', () => {
    const ids = Array.from({ length: 2_000 }, () => newEventId());
    for (const id of ids.slice(0, 50)) {
      expect(validate(id)).toBe(true);
      expect(version(id)).toBe(7);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('given requests that do not fit the rest of the pool, when bytes are taken, then every slice has the asked length and the pool is refilled', () => {
    const slices = Array.from({ length: 600 }, () => Buffer.from(pooledRandomBytes(13)));
    expect(slices.every((slice) => slice.length === 13)).toBe(true);
    expect(new Set(slices.map((slice) => slice.toString('hex'))).size).toBe(slices.length);
  });
});
