// The SQL channel's dispatcher as a process of its own: `node dist/apps/dispatcher-sql/main.js [--config <file>]`.
// It is built only on the dispatcher kit (docs/dispatchers.md).
import { sqlKit } from './sql-channel';

await sqlKit.main();
