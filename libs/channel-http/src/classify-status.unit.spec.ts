import { describe, expect, it } from 'vitest';
import { classifyStatus } from './classify-status';

describe('classifyStatus', () => {
  it.each([
    [200, 'succeeded'],
    [201, 'succeeded'],
    [204, 'succeeded'],
    [301, 'failed'],
    [302, 'failed'],
    [304, 'failed'],
    [400, 'failed'],
    [404, 'failed'],
    [409, 'failed'],
    [500, 'failed'],
    [503, 'failed'],
    [502, 'unknown'],
    [504, 'unknown'],
  ])('given status %i, then the outcome is %s', (status, outcome) => {
    expect(classifyStatus(status)).toBe(outcome);
  });
});
