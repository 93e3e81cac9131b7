/**
 * The gateway service: the MCP front (Streamable HTTP and stdio), the approvals API and the console's back end, and
 * how a process hosts them (`oncegate serve gateway`, or beside every other service in `oncegate start`).
 */
export { gatewayService, hostFront, type Front } from './gateway-service';
export { tokenRevoked } from './front/mcp-errors';
export { connectMcpServer, createMcpServer } from './front/mcp-server';
export { StdioConnection } from './front/stdio-connection';
export type { ToolCalls } from './front/tool-calls';
export { toolResult } from './front/tool-results';
