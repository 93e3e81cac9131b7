import { Module, type DynamicModule } from '@nestjs/common';
import { EventStoreModule } from '@oncegate/nest-event-store';
import type { EventStore } from '@oncegate/event-store';
import type { ToolContract } from '@oncegate/contracts';
import type { SshDispatcher } from '@oncegate/dispatcher-ssh';
import type { Clock } from '@oncegate/execution-journal';
import type { SealedStore } from '@oncegate/sealed-store';
import type { VaultService } from '@oncegate/service-host/vault/vault-service';
import { CLOCK, DISPATCHER_ID, SEALED_STORE, SSH_DISPATCHER, TOOLS, VAULT } from '@oncegate/service-host/tokens';
import { DispatcherSshController } from './dispatcher-ssh.controller';

export interface DispatcherSshDependencies {
  readonly store: EventStore;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly sealed: SealedStore;
  readonly ssh: SshDispatcher;
  /** Credentials come from the vault at send time. */
  readonly vault: VaultService;
  /** Unique per process (`dispatcherInstanceId`); stamped on every `Dispatched` and held as a liveness lease. */
  readonly dispatcherId: string;
  readonly clock: Clock;
}

@Module({})
export class DispatcherSshModule {
  static forRoot(deps: DispatcherSshDependencies): DynamicModule {
    return {
      module: DispatcherSshModule,
      imports: [EventStoreModule.forRoot({ open: () => deps.store })],
      controllers: [DispatcherSshController],
      providers: [
        { provide: TOOLS, useValue: deps.tools },
        { provide: SEALED_STORE, useValue: deps.sealed },
        { provide: SSH_DISPATCHER, useValue: deps.ssh },
        { provide: VAULT, useValue: deps.vault },
        { provide: DISPATCHER_ID, useValue: deps.dispatcherId },
        { provide: CLOCK, useValue: deps.clock },
      ],
    };
  }
}
