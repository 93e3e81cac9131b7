import { exitWhenDone, PROCESS_IO } from '@oncegate/service-host';
import { runCli } from './cli';

exitWhenDone(await runCli(process.argv.slice(2), PROCESS_IO));
