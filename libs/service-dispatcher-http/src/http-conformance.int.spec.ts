import { describeDispatcherConformance } from '@oncegate/dispatcher-kit/testing/vitest';
import { HTTP_CONFORMANCE, openHttpConformanceSubject } from './testing/http-conformance-subject';

// The HTTP channel against a real loopback HTTP server, through the dispatcher kit's conformance suite (under vitest;
// http-conformance.node-test.ts runs the same suite under node --test).
describeDispatcherConformance('http (loopback target)', openHttpConformanceSubject, HTTP_CONFORMANCE);
