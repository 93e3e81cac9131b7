import { Controller, Inject, Logger, type OnModuleDestroy } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { DEFINITE_OUTCOME_STATUSES, type AnswerTold, type ExecutionId, type ExecutionStatus } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import { isoNow, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
import type { DeliveryTracker } from './callers';
import pRetry from 'p-retry';
import { DueQueue } from './due-queue';
import { CLOCK, DELIVERY_TRACKER } from '@oncegate/service-host';

/** How often a late check that failed (the store away, a conflict) is tried again before it is given up and logged. */
const CHECK_RETRIES = 4;

/**
 * Tracks whether results reach their callers. A caller waiting on an open transport records its own delivery
 * once the transport settles; when an outcome arrives and nobody is waiting (the connection dropped, the client
 * cancelled, the gateway restarted), the result is recorded as not delivered, so a retry gets the stored result.
 * Where the callers wait in other processes, an outcome is checked once nobody was answered with it for a while
 * (`late`): a caller answered at once shows itself by its answer, and one that waits long by its lease. What a
 * process that dies still held is not checked: those executions stay `completed`, and a retry gets the stored result
 * as it would from `completed_result_not_delivered`.
 */
@Controller()
export class ResultDeliveryController implements OnModuleDestroy {
  /** Outcomes nobody was answered with yet, by execution, checked when they fall due (the event that brought each). */
  private readonly late: DueQueue<string>;
  private readonly log = new Logger('result-delivery');

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(DELIVERY_TRACKER) private readonly deliveries: DeliveryTracker,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.late = new DueQueue(deliveries.shownWithinMs, clock, (executionId, causationId) =>
      pRetry(() => this.recordIfNobodyWaits(executionId as ExecutionId, causationId), { retries: CHECK_RETRIES, minTimeout: 200 }).catch((error: unknown) =>
        this.log.error(`could not check whether a caller waited for ${executionId}: ${(error as Error).message}`),
      ),
    );
  }

  @EventPattern('OutcomeObserved')
  async onOutcome(@Payload() event: RecordedEvent): Promise<void> {
    const executionId = event.metadata['executionId'] as ExecutionId;
    if (this.deliveries.hasCaller(executionId)) return;
    if (this.deliveries.sharesCallers) this.late.add(executionId, event.id);
    else await this.recordIfNobodyWaits(executionId, event.id);
  }

  /** An answer that told the outcome: a caller was waiting for it. */
  @EventPattern(['AnswerGiven', 'ResultDelivered', 'ResultDeliveryFailed'])
  onAnswer(@Payload() event: RecordedEvent): void {
    if (this.late.size === 0) return;
    const told = (event.data as { told?: AnswerTold }).told;
    if (told === undefined || (DEFINITE_OUTCOME_STATUSES as readonly ExecutionStatus[]).includes(told.state)) {
      this.late.delete(event.metadata['executionId'] as string);
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.late.drain();
  }

  private async recordIfNobodyWaits(executionId: ExecutionId, causationId: string): Promise<void> {
    if (await this.deliveries.waiting(executionId)) return;
    await runExecutionCommand(
      this.store,
      executionId,
      (state) =>
        state.outcome !== null && state.delivery === null && !this.deliveries.hasCaller(executionId)
          ? {
              type: 'RecordResultDeliveryFailed',
              executionId,
              now: isoNow(this.clock),
              correlation: {},
              reason: 'no caller was waiting on an open transport when the outcome arrived',
            }
          : undefined,
      { actor: 'service:result-delivery', causationId },
      this.clock,
    );
  }
}
