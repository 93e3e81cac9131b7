// The dispatcher kit's conformance suite for the HTTP channel under Node's own test runner, as a team without vitest
// runs it: `node --import tsx --test libs/service-dispatcher-http/src/http-conformance.node-test.ts`
// (http-conformance.node.int.spec.ts runs it so, and reads its report).
import { defineDispatcherConformance, nodeTestRunner } from '@oncegate/dispatcher-kit/testing';
import { HTTP_CONFORMANCE, openHttpConformanceSubject } from './testing/http-conformance-subject';

defineDispatcherConformance(nodeTestRunner, 'http (loopback target) under node:test', openHttpConformanceSubject, HTTP_CONFORMANCE);
