// @oncegate/service-dispatcher-mcp: the `mcp` channel, an upstream MCP server's tools behind Oncegate (docs/dispatchers.md).
export { storedAnswer, type StoredAnswer } from './call-result';
export { heldReason, McpChannelDriver, mcpKit } from './mcp-channel';
export { checkMcpSection, mcpSection, type McpSection, type UpstreamTransport } from './mcp-section';
export { ATTEMPT_META, EXECUTION_ID_META } from './upstream-session';
