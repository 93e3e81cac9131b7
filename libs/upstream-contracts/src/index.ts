export { upstreamContractFile, type LeftOutTool, type UpstreamContract, type UpstreamContractInput, type WrittenTool } from './upstream-contract-file';
export { UnknownUpstreamToolError, UpstreamContractError } from './upstream-errors';
export {
  DEFAULT_WINDOWS,
  isUpstreamClass,
  oncegateToolName,
  UPSTREAM_CLASSES,
  type UpstreamClass,
  type UpstreamEndpoint,
  type UpstreamTool,
} from './upstream-tool-entry';
export { acceptUpstream, type AcceptRequest, type AcceptResult } from './upstream-accept';
export { differs, diffUpstream, formatUpstreamDiff, jsonChanges, type ChangedTool, type JsonChange, type UpstreamDiff } from './upstream-diff';
export { readContractFileTools, type ContractFileTools, type WrittenUpstreamTool } from './upstream-tools-in-file';
