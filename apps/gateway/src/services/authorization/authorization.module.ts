import { Module, type DynamicModule } from '@nestjs/common';
import { EventStoreModule } from '@oncegate/nest-event-store';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { AllowList } from '../allow-list';
import type { CredentialResolver } from '../credentials';
import { ALLOW_LIST, CLOCK, CREDENTIALS } from '../tokens';
import { AuthorizationController } from './authorization.controller';

export interface AuthorizationDependencies {
  readonly store: EventStore;
  readonly allowList: AllowList;
  readonly credentials: CredentialResolver;
  readonly clock: Clock;
}

@Module({})
export class AuthorizationModule {
  static forRoot(deps: AuthorizationDependencies): DynamicModule {
    return {
      module: AuthorizationModule,
      imports: [EventStoreModule.forRoot({ open: () => deps.store })],
      controllers: [AuthorizationController],
      providers: [
        { provide: ALLOW_LIST, useValue: deps.allowList },
        { provide: CREDENTIALS, useValue: deps.credentials },
        { provide: CLOCK, useValue: deps.clock },
      ],
    };
  }
}
