import { describe, expect, it } from 'vitest';
import { closestMatch, levenshtein } from './suggest';

describe('did-you-mean suggestions', () => {
  it('given a typo, when compared, then the distance counts each edit once, swaps included', () => {
    expect(levenshtein('corelation_window', 'correlation_window')).toBe(1);
    expect(levenshtein('valeu', 'value')).toBe(1);
    expect(levenshtein('abc', 'xyz')).toBe(3);
  });

  it('given a near and a far word, when matched, then only the near one is suggested', () => {
    expect(closestMatch('methd', ['method', 'url'])).toBe('method');
    expect(closestMatch('READ_ONLY', ['read_only'])).toBe('read_only');
    expect(closestMatch('banana', ['method', 'url'])).toBeUndefined();
  });
});
