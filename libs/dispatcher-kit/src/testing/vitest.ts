import { afterAll, beforeAll, describe, it } from 'vitest';
import { defineDispatcherConformance, type ConformanceOptions, type ConformanceRunner, type ConformanceSubject } from '@oncegate/dispatcher-kit/testing';

/** The conformance suite under vitest (`@oncegate/dispatcher-kit/testing/vitest`, apart so that no other runner needs vitest). */
export const vitestRunner: ConformanceRunner = {
  describe: (name, body) => describe(name, body),
  it: (name, body, timeoutMs) => it(name, body, timeoutMs),
  // Skipped from inside, so that the run's summary says why.
  skip: (name, reason) => it(name, (context) => context.skip(reason)),
  beforeAll: (body, timeoutMs) => beforeAll(body, timeoutMs),
  afterAll: (body, timeoutMs) => afterAll(body, timeoutMs),
};

/** `defineDispatcherConformance` under vitest. */
export function describeDispatcherConformance(name: string, open: () => Promise<ConformanceSubject>, options: ConformanceOptions): void {
  defineDispatcherConformance(vitestRunner, name, open, options);
}
