import { isUlid } from '@oncegate/domain';
import { decodeTime } from 'ulid';
import { describe, expect, it } from 'vitest';
import { newUlid } from './ulid';

describe('newUlid', () => {
  it('given a time, when an id is made, then it is a canonical ULID whose time decodes back', () => {
    const at = Date.parse('2026-11-30T06:00:00.000Z');
    const id = newUlid(at);
    expect(isUlid(id)).toBe(true);
    expect(decodeTime(id)).toBe(at);
  });

  it('given many ids in one millisecond, when compared, then they are all different', () => {
    const ids = new Set(Array.from({ length: 5000 }, () => newUlid(1_700_000_000_000)));
    expect(ids.size).toBe(5000);
  });
});
