import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { argumentShapeViolations } from '@oncegate/contracts';
import { invalidArguments } from './mcp-errors';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidParams(message: string): McpError {
  return new McpError(ErrorCode.InvalidParams, `${message}; nothing was accepted`);
}

/**
 * Checks a tools/call request as it came off the wire, before the SDK parses it: a malformed `params` would
 * otherwise be answered with a raw schema dump as an internal error, and a `__proto__` argument would be dropped
 * by the SDK's copy before any schema saw it. `undefined` for anything else, and for a well-formed call.
 */
export function refuseMalformedCall(message: unknown): McpError | undefined {
  if (!isObject(message) || message['method'] !== 'tools/call' || message['id'] === undefined) return undefined;
  const params = message['params'];
  if (!isObject(params)) return invalidParams('tools/call: params must be an object with name and arguments');
  const name = params['name'];
  if (typeof name !== 'string') return invalidParams('tools/call: params.name must be a string (the tool name)');
  const args = params['arguments'];
  if (args !== undefined && !isObject(args)) return invalidParams('tools/call: params.arguments must be an object of argument names to values');
  if (params['_meta'] !== undefined && !isObject(params['_meta'])) return invalidParams('tools/call: params._meta must be an object');
  const violations = argumentShapeViolations(args ?? {});
  return violations.length > 0 ? invalidArguments(name, violations) : undefined;
}

/**
 * What is wrong with a message that names `initialize` but is not a valid initialize request, in words an
 * agent's author can act on; `undefined` when it is not an initialize message.
 */
export function initializeProblem(message: unknown): string | undefined {
  if (!isObject(message) || message['method'] !== 'initialize') return undefined;
  const params = message['params'];
  if (message['id'] === undefined) return 'initialize: it is a request and needs an id';
  if (!isObject(params)) return 'initialize: params must be an object with protocolVersion, capabilities and clientInfo';
  if (typeof params['protocolVersion'] !== 'string') return 'initialize: params.protocolVersion must be a string, e.g. "2025-11-25"';
  if (!isObject(params['capabilities'])) return 'initialize: params.capabilities must be an object';
  const client = params['clientInfo'];
  if (!isObject(client) || typeof client['name'] !== 'string' || typeof client['version'] !== 'string') {
    return 'initialize: params.clientInfo must be an object with name and version (strings)';
  }
  return 'initialize: the request is not a valid initialize request';
}
