// The sealer service as a process of its own: `node dist/apps/sealer/main.js [--config <file>]`, the same as
// `oncegate serve sealer`. The service itself is the library @oncegate/service-sealer.
import { serviceMain } from '@oncegate/service-host';
import { sealerService } from '@oncegate/service-sealer';

await serviceMain(sealerService);
