// A channel that breaks the promise on purpose, for http-conformance.node.int.spec.ts: its target counts every effect
// twice, as a channel that sent each call twice would leave it. The suite must fail, saying so.
import { defineDispatcherConformance, nodeTestRunner } from '@oncegate/dispatcher-kit/testing';
import { openHttpConformanceSubject } from './http-conformance-subject';

defineDispatcherConformance(
  nodeTestRunner,
  'a channel that sends each call twice',
  async () => {
    const subject = await openHttpConformanceSubject();
    return { ...subject, target: { ...subject.target, effects: async (executionId) => 2 * (await subject.target.effects(executionId)) } };
  },
  { classes: ['irreversible'] },
);
