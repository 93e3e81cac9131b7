import { after, before, describe, it } from 'node:test';
import type { ConformanceRunner } from './conformance';

/**
 * The conformance suite under Node's own test runner (`node --test`): no test framework to install.
 *
 * ```ts
 * import { defineDispatcherConformance, nodeTestRunner } from '@oncegate/dispatcher-kit/testing';
 * defineDispatcherConformance(nodeTestRunner, 'ledger', openSubject, { classes: ['idempotent_write'] });
 * ```
 */
export const nodeTestRunner: ConformanceRunner = {
  describe: (name, body) => void describe(name, body),
  it: (name, body, timeoutMs) => void it(name, { timeout: timeoutMs }, body),
  skip: (name, reason) => void it(name, { skip: reason }),
  beforeAll: (body, timeoutMs) => before(body, { timeout: timeoutMs }),
  afterAll: (body, timeoutMs) => after(body, { timeout: timeoutMs }),
};
