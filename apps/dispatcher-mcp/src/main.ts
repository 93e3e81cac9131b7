// The MCP channel's dispatcher as a process of its own: `node dist/apps/dispatcher-mcp/main.js [--config <file>]`,
// beside a gateway whose `dispatch_channels` leaves mcp out (or beside the services apart). The channel is built only on
// the dispatcher kit (docs/dispatchers.md, the MCP channel).
import { mcpKit } from '@oncegate/service-dispatcher-mcp';

await mcpKit.main();
