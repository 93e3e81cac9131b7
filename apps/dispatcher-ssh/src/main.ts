// The dispatcher-ssh service as a process of its own: `node dist/apps/dispatcher-ssh/main.js [--config <file>]`, the same as
// `oncegate serve dispatcher-ssh`. The service itself is the library @oncegate/service-dispatcher-ssh.
import { dispatcherSshService } from '@oncegate/service-dispatcher-ssh';
import { serviceMain } from '@oncegate/service-host';

await serviceMain(dispatcherSshService);
