import { Module, type DynamicModule } from '@nestjs/common';
import { EventStoreModule } from '@oncegate/nest-event-store';
import type { EventStore } from '@oncegate/event-store';
import type { ToolContract } from '@oncegate/contracts';
import type { HttpDispatcher } from '@oncegate/dispatcher-http';
import type { Clock } from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import type { VaultService } from '@oncegate/service-host/vault/vault-service';
import { CLOCK, DISPATCHER_ID, HTTP_DISPATCHER, PREPARED_CALLS, SEALED_STORE, TOOLS, VAULT } from '@oncegate/service-host/tokens';
import { PreparedCalls } from '@oncegate/service-host/prepared-calls';
import { DispatcherHttpController } from './dispatcher-http.controller';

export interface DispatcherHttpDependencies {
  readonly store: EventStore;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly sealed: SealedStore;
  readonly http: HttpDispatcher;
  /** Credentials come from the vault at send time. */
  readonly vault: VaultService;
  /** Unique per process (`dispatcherInstanceId`); stamped on every `Dispatched` and held as a liveness lease. */
  readonly dispatcherId: string;
  readonly clock: Clock;
  /** Shared by authorization and the HTTP dispatcher of one process, so a call is prepared once. */
  readonly prepared?: PreparedCalls;
}

@Module({})
export class DispatcherHttpModule {
  static forRoot(deps: DispatcherHttpDependencies): DynamicModule {
    return {
      module: DispatcherHttpModule,
      imports: [EventStoreModule.forRoot({ open: () => deps.store })],
      controllers: [DispatcherHttpController],
      providers: [
        { provide: TOOLS, useValue: deps.tools },
        { provide: SEALED_STORE, useValue: deps.sealed },
        { provide: HTTP_DISPATCHER, useValue: deps.http },
        { provide: VAULT, useValue: deps.vault },
        { provide: DISPATCHER_ID, useValue: deps.dispatcherId },
        { provide: CLOCK, useValue: deps.clock },
        { provide: PREPARED_CALLS, useValue: deps.prepared ?? new PreparedCalls(deps.sealed) },
      ],
    };
  }
}
