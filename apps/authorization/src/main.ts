// The authorization service as a process of its own: `node dist/apps/authorization/main.js [--config <file>]`, the same as
// `oncegate serve authorization`. The service itself is the library @oncegate/service-authorization.
import { authorizationService } from '@oncegate/service-authorization';
import { serviceMain } from '@oncegate/service-host';

await serviceMain(authorizationService);
