import { Global, Module, type DynamicModule } from '@nestjs/common';
import type { EventStore } from '@oncegate/event-store';

/** Injection token of the process's one `EventStore`. */
export const EVENT_STORE = Symbol('oncegate:event-store');

export interface EventStoreModuleOptions {
  /** Opens (or returns the already open) store; which adapter is chosen by configuration, not here. */
  readonly open: () => EventStore | Promise<EventStore>;
}

/** Makes the configured event store injectable as `@Inject(EVENT_STORE)` in every module of a service. */
@Global()
@Module({})
export class EventStoreModule {
  static forRoot(options: EventStoreModuleOptions): DynamicModule {
    return {
      module: EventStoreModule,
      providers: [{ provide: EVENT_STORE, useFactory: options.open }],
      exports: [EVENT_STORE],
    };
  }
}
