import { describe, expect, it } from 'vitest';
import { addMs, epochMsOf, isBefore, isIsoInstant } from './durations';

describe('instants', () => {
  it('given the same instant read again and again, then each reading agrees with the first', () => {
    const instant = '2026-12-07T02:10:13.123Z';
    for (let i = 0; i < 3; i += 1) {
      expect(isIsoInstant(instant)).toBe(true);
      expect(epochMsOf(instant)).toBe(Date.UTC(2026, 11, 7, 2, 10, 13, 123));
    }
    expect(addMs(instant, 877)).toBe('2026-12-07T02:10:14.000Z');
  });

  it('given a malformed or impossible instant after a good one, then it is refused all the same', () => {
    expect(isIsoInstant('2026-12-07T02:10:13Z')).toBe(true);
    expect(isIsoInstant('2026-13-45T25:61:00Z')).toBe(false);
    expect(isIsoInstant('2026-12-07 02:10:13Z')).toBe(false);
    expect(isIsoInstant(20261207)).toBe(false);
    expect(isIsoInstant('2026-12-07T02:10:13Z')).toBe(true);
  });

  it('given instants in different zones, then they compare by the moment they name', () => {
    expect(isBefore('2026-12-07T03:00:00+02:00', '2026-12-07T02:00:00Z')).toBe(true);
    expect(isBefore('2026-12-07T02:00:00Z', '2026-12-07T03:00:00+02:00')).toBe(false);
    expect(epochMsOf('2026-12-07T04:00:00+02:00')).toBe(epochMsOf('2026-12-07T02:00:00Z'));
  });
});
