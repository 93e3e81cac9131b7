import { exitWhenDone, PROCESS_IO } from '@oncegate/host-cli';
import { runCli } from './cli';

exitWhenDone(await runCli(process.argv.slice(2), PROCESS_IO));
