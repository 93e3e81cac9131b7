import { Module, type DynamicModule } from '@nestjs/common';
import { EventStoreModule } from '@oncegate/nest-event-store';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { DeliveryTracker } from './callers';
import { CLOCK, DELIVERY_TRACKER } from '@oncegate/service-host';
import { ResultDeliveryController } from './result-delivery.controller';

export interface ResultDeliveryDependencies {
  readonly store: EventStore;
  readonly deliveries: DeliveryTracker;
  readonly clock: Clock;
}

@Module({})
export class ResultDeliveryModule {
  static forRoot(deps: ResultDeliveryDependencies): DynamicModule {
    return {
      module: ResultDeliveryModule,
      imports: [EventStoreModule.forRoot({ open: () => deps.store })],
      controllers: [ResultDeliveryController],
      providers: [
        { provide: DELIVERY_TRACKER, useValue: deps.deliveries },
        { provide: CLOCK, useValue: deps.clock },
      ],
    };
  }
}
