import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { ExecutionAcceptedData, ExecutionId } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { EVENT_STORE } from '@oncegate/nest-event-store';
import { isoNow, runExecutionCommand, type Clock } from '@oncegate/execution-journal';
import type { AllowList } from '../allow-list';
import type { CredentialResolver } from '../credentials';
import { ALLOW_LIST, CLOCK, CREDENTIALS } from '../tokens';

/** Decides whether an accepted execution may be sent, and records the verdict with its basis. */
@Controller()
export class AuthorizationController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(ALLOW_LIST) private readonly allowList: AllowList,
    @Inject(CREDENTIALS) private readonly credentials: CredentialResolver,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @EventPattern('ExecutionAccepted')
  async onAccepted(@Payload() event: RecordedEvent<ExecutionAcceptedData>): Promise<void> {
    const { executionId, record } = event.data;
    await runExecutionCommand(
      this.store,
      executionId as ExecutionId,
      (state) => {
        if (state.status !== 'accepted') return undefined;
        const now = isoNow(this.clock);
        if (record.credential_ref && !this.credentials.resolvable(record.credential_ref)) {
          return {
            type: 'DenyExecution',
            executionId,
            now,
            basis: 'credential_unresolved',
            reason: `credential '${record.credential_ref}' is not configured on this gateway.`,
          };
        }
        if (!this.allowList.allows(record.actor, record.tool)) {
          return {
            type: 'DenyExecution',
            executionId,
            now,
            basis: 'policy',
            reason: `${record.actor} is not on the allow list of ${record.tool}.`,
          };
        }
        return { type: 'AuthorizeExecution', executionId, now, basis: 'policy' };
      },
      { actor: 'service:authorization', causationId: event.id, correlation: event.data.correlation },
      this.clock,
    );
  }
}
