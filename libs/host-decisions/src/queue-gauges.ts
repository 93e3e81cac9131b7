import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { OperationsServer, ProcessMetrics } from '@oncegate/host-operations';
import { pending } from './approval-queue';
import { held } from './review-queue';

/** How long one reading of the queues serves scrapes: reading them scans the executions that ever asked. */
const QUEUES_FRESH_MS = 10_000;

let registered = false;

/** What the gauges need of the process's host: its journal and clock, its metrics, and its operations listener. */
export interface QueueGaugesHost {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly metrics: ProcessMetrics;
  readonly operations: OperationsServer | undefined;
}

/**
 * Gauges of what waits for people: approval requests pending and review cases held, with the age of the oldest of
 * each. Read from the journal when scraped (at most every 10 s), in the process that serves the MCP front.
 */
export function queueGauges(host: QueueGaugesHost): void {
  if (registered || host.operations === undefined) return;
  registered = true;
  const { store, clock, metrics } = host;
  let reading: { at: number; value: Promise<{ approvals: number; oldestApproval: number; held: number; oldestHeld: number }> } | undefined;
  const queues = () => {
    const now = clock.now().getTime();
    if (reading === undefined || now - reading.at > QUEUES_FRESH_MS) {
      const value = Promise.all([pending(store, clock), held(store)]).then(([approvals, cases]) => ({
        approvals: approvals.length,
        oldestApproval: approvals.length === 0 ? 0 : (now - Math.min(...approvals.map((approval) => Date.parse(approval.requestedAt)))) / 1000,
        held: cases.length,
        oldestHeld: cases.length === 0 ? 0 : (now - Math.min(...cases.map((item) => Date.parse(item.requiredAt)))) / 1000,
      }));
      reading = { at: now, value };
      value.catch(() => (reading = undefined));
    }
    return reading.value;
  };
  metrics.gauge('oncegate_approvals_pending', 'Approval requests waiting for a decision.', async () => (await queues()).approvals);
  metrics.gauge('oncegate_approvals_oldest_pending_seconds', 'Age of the oldest approval request waiting for a decision (0 when none waits).', async () => (await queues()).oldestApproval);
  metrics.gauge('oncegate_review_held', 'Executions held for an operator to review.', async () => (await queues()).held);
  metrics.gauge('oncegate_review_oldest_held_seconds', 'Age of the oldest execution held for review (0 when none is).', async () => (await queues()).oldestHeld);
}
