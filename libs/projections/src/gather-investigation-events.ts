/**
 * Reads what `investigate` needs, straight from the streams (no projection): the execution's stream, the claim
 * stream of its fingerprint, and every execution claimed there — so a new execution made by a later retry of the
 * same intent shows up too.
 */
import { executionStream, intentStream, isExecutionId, isFingerprint, type ExecutionId, type Fingerprint } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import type { InvestigationSubject } from './investigate';

export async function gatherInvestigationEvents(store: Pick<EventStore, 'readStream'>, subject: InvestigationSubject): Promise<RecordedEvent[]> {
  const byPosition = new Map<number, RecordedEvent>();
  const add = (events: readonly RecordedEvent[]): void => {
    for (const event of events) byPosition.set(event.position, event);
  };
  const readExecution = async (executionId: ExecutionId): Promise<readonly RecordedEvent[]> => {
    const events = await store.readStream(executionStream(executionId));
    add(events);
    return events;
  };

  let fingerprint: Fingerprint | undefined;
  if ('executionId' in subject) {
    const events = await readExecution(subject.executionId);
    const accepted = events.find((event) => event.type === 'ExecutionAccepted')?.data as { fingerprint?: unknown } | undefined;
    fingerprint = isFingerprint(accepted?.fingerprint) ? accepted.fingerprint : undefined;
  } else {
    fingerprint = subject.fingerprint;
  }
  if (fingerprint !== undefined) {
    const claims = await store.readStream(intentStream(fingerprint));
    add(claims);
    const claimed = new Set<ExecutionId>();
    for (const claim of claims) {
      const executionId = (claim.data as { executionId?: unknown } | null)?.executionId;
      if (isExecutionId(executionId)) claimed.add(executionId);
    }
    for (const executionId of claimed) {
      if ('executionId' in subject && executionId === subject.executionId) continue;
      await readExecution(executionId);
    }
  }
  return [...byPosition.values()].sort((a, b) => a.position - b.position);
}
