import { hostname } from 'node:os';
import type { INestMicroservice } from '@nestjs/common';
import { microservice, SERVICE_CONSUMERS, type Host, type ServiceDefinition } from '@oncegate/service-host';
import { DeliveryTracker } from './callers';
import { ResultDeliveryModule } from './result-delivery.module';

/** Result delivery as a Nest microservice of this process, deciding from `deliveries`. */
export async function hostResultDelivery(host: Host, deliveries: DeliveryTracker): Promise<INestMicroservice> {
  return microservice(host, ResultDeliveryModule.forRoot({ store: host.store, deliveries, clock: host.clock }), SERVICE_CONSUMERS.resultDelivery);
}

/**
 * Callers as the services apart see them: a gateway shows the callers waiting on it through the store's leases, and
 * result delivery reads them there. A lease outlives the longest wait of a call.
 */
export function sharedCallers(host: Host): DeliveryTracker {
  return new DeliveryTracker({ store: host.store, instance: `${hostname()}/${host.instance}`, leaseMs: host.config.callWaitMs + 30_000, clock: host.clock });
}

/** `oncegate serve result-delivery`. */
export const resultDeliveryService: ServiceDefinition = {
  name: 'result-delivery',
  async serve(host) {
    const app = await hostResultDelivery(host, sharedCallers(host));
    return { close: () => app.close() };
  },
};
