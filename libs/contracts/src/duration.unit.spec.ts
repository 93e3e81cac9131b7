import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['90s', 90_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['0', 0],
    [0, 0],
  ])('given %j, when parsed, then it is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([['90'], [90], ['5 m'], ['5min'], ['-5s'], ['1.5h'], [''], [null], ['until_confirmed']])('given %j, when parsed, then it is refused', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});
