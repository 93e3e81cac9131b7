import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ExecutionId } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import { isoNow, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
import type { DeliveryTracker } from './callers';
import { CLOCK, DELIVERY_TRACKER } from '@oncegate/service-host';

/**
 * Tracks whether results reach their callers. A caller waiting on an open transport records its own delivery
 * once the transport settles; when an outcome arrives and nobody is waiting (the connection dropped, the client
 * cancelled, the gateway restarted), the result is recorded as not delivered, so a retry gets the stored result.
 */
@Controller()
export class ResultDeliveryController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(DELIVERY_TRACKER) private readonly deliveries: DeliveryTracker,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @EventPattern('OutcomeObserved')
  async onOutcome(@Payload() event: RecordedEvent): Promise<void> {
    const executionId = event.metadata['executionId'] as ExecutionId;
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
      { actor: 'service:result-delivery', causationId: event.id },
      this.clock,
    );
  }
}
