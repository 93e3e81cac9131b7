// The conformance suite under Node's own test runner: `node --test dist/test/ledger.node.test.js`.
import { defineDispatcherConformance, nodeTestRunner } from '@oncegate/dispatcher-kit/testing';
import { ledgerSubject, OPTIONS } from './ledger-subject.js';

defineDispatcherConformance(nodeTestRunner, 'ledger', ledgerSubject, OPTIONS);
