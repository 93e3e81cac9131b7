import { describe, expect, it } from 'vitest';
import { backoffMs } from './backoff';

describe('backoffMs', () => {
  it('doubles the base per try and stops at the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((attempt) => backoffMs(attempt, 50, 2_000))).toEqual([50, 100, 200, 400, 800, 1_600, 2_000]);
  });

  it('has no cap unless given one, and stays finite however many tries', () => {
    expect(backoffMs(3, 20)).toBe(160);
    expect(backoffMs(10_000, 50, 5_000)).toBe(5_000);
    expect(Number.isFinite(backoffMs(10_000, 1))).toBe(true);
  });
});
