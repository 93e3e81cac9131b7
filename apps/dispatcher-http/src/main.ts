// The dispatcher-http service as a process of its own: `node dist/apps/dispatcher-http/main.js [--config <file>]`, the same as
// `oncegate serve dispatcher-http`. The service itself is the library @oncegate/service-dispatcher-http.
import { dispatcherHttpService } from '@oncegate/service-dispatcher-http';
import { serviceMain } from '@oncegate/service-host';

await serviceMain(dispatcherHttpService);
