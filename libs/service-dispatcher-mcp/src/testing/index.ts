// @oncegate/service-dispatcher-mcp/testing: an upstream MCP server for the channel's tests (Streamable HTTP and stdio,
// on the official SDK's server), and contract tools in front of it.
export {
  alive,
  serveStdioUpstream,
  startHttpUpstream,
  upstreamServer,
  upstreamTools,
  UpstreamFolder,
  type HttpUpstream,
  type HttpUpstreamOptions,
  type UpstreamEffect,
  type UpstreamFault,
  type UpstreamVariant,
} from './upstream-server';
export { mcpContract, mcpContractTools, startUpstreamProcess, stdioUpstreamCommand, upstreamDigest, type McpContractTool, type UpstreamProcess, type UpstreamReach } from './upstream-contract';
export { upstreamScript } from './upstream-script';
export { startTasksUpstream, type TasksUpstream } from './tasks-upstream';
