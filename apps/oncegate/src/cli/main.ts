import { PROCESS_IO } from '@oncegate/service-host/cli-command';
import { runCli } from './cli';

process.exitCode = await runCli(process.argv.slice(2), PROCESS_IO);
