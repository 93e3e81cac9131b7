import { Module, type DynamicModule } from '@nestjs/common';
import type { ToolContract } from '@oncegate/contracts';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { VaultService } from '@oncegate/host-vault';
import { EventStoreModule } from '@oncegate/nest-event-store';
import type { SealedStore } from '@oncegate/sealed-store';
import { APPROVAL_TIMEOUT_MS, CLOCK, POLICY, PREPARED_CALLS, PreparedCalls, SEALED_STORE, TOOLS, VAULT } from '@oncegate/service-host';
import { AuthorizationController } from './authorization.controller';
import type { Policy } from './policy';

export interface AuthorizationDependencies {
  readonly store: EventStore;
  readonly policy: Policy;
  readonly vault: VaultService;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly sealed: SealedStore;
  readonly approvalTimeoutMs: number;
  readonly clock: Clock;
  /** Shared by authorization and the HTTP dispatcher of one process, so a call is prepared once. */
  readonly prepared?: PreparedCalls;
}

@Module({})
export class AuthorizationModule {
  static forRoot(deps: AuthorizationDependencies): DynamicModule {
    return {
      module: AuthorizationModule,
      imports: [EventStoreModule.forRoot({ open: () => deps.store })],
      controllers: [AuthorizationController],
      providers: [
        { provide: POLICY, useValue: deps.policy },
        { provide: VAULT, useValue: deps.vault },
        { provide: TOOLS, useValue: deps.tools },
        { provide: SEALED_STORE, useValue: deps.sealed },
        { provide: APPROVAL_TIMEOUT_MS, useValue: deps.approvalTimeoutMs },
        { provide: CLOCK, useValue: deps.clock },
        { provide: PREPARED_CALLS, useValue: deps.prepared ?? new PreparedCalls(deps.sealed) },
      ],
    };
  }
}
