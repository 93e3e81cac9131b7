// The result-delivery service as a process of its own: `node dist/apps/result-delivery/main.js [--config <file>]`, the same as
// `oncegate serve result-delivery`. The service itself is the library @oncegate/service-result-delivery.
import { serviceMain } from '@oncegate/service-host';
import { resultDeliveryService } from '@oncegate/service-result-delivery';

await serviceMain(resultDeliveryService);
