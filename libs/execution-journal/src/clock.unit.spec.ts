import { describe, expect, it } from 'vitest';
import { isoNow, systemClock, type Clock } from './clock';

describe('isoNow', () => {
  it('given the system clock, then it writes the current millisecond', () => {
    const before = Date.now();
    const written = isoNow(systemClock);
    const after = Date.now();
    expect(written).toBe(new Date(Date.parse(written)).toISOString());
    expect(Date.parse(written)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(written)).toBeLessThanOrEqual(after);
  });

  it('given another clock, then its time is written, not the system clock’s', () => {
    let now = new Date('2026-01-02T03:04:05.006Z');
    const clock: Clock = { now: () => now };
    expect(isoNow(systemClock)).not.toBe('2026-01-02T03:04:05.006Z');
    expect(isoNow(clock)).toBe('2026-01-02T03:04:05.006Z');
    now = new Date('2026-01-02T03:04:05.007Z');
    expect(isoNow(clock)).toBe('2026-01-02T03:04:05.007Z');
  });
});
