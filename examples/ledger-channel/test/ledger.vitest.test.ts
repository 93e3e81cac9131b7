// The conformance suite under vitest: `vitest run test/ledger.vitest.test.ts`.
import { describeDispatcherConformance } from '@oncegate/dispatcher-kit/testing/vitest';
import { ledgerSubject, OPTIONS } from './ledger-subject.js';

describeDispatcherConformance('ledger', ledgerSubject, OPTIONS);
