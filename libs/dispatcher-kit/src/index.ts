// @oncegate/dispatcher-kit: what a team builds a channel with (docs/dispatchers.md). Everything here is the package's
// public API (api/dispatcher-kit.api.md); the host's side of the kit is in host.ts, for this repository's processes.
export type {
  ChannelAttempt,
  ChannelContext,
  ChannelNotice,
  ChannelContract,
  ChannelDefinition,
  ChannelDriver,
  ChannelLimits,
  ChannelLog,
  ChannelTool,
  CredentialKind,
  DispatchRefusal,
  MarkerFinding,
  ProgressReport,
  ResumedTask,
  SendOutcome,
  StatusFinding,
} from './channel-definition';
export { OPERATION_CLASSES, type DefiniteOutcome, type ExecutionId, type OperationClass, type TaskFinding, type UnknownOutcomeReason } from '@oncegate/domain';
export { defineChannel, type KitChannel } from './define-channel';
export { hideSecrets, HIDDEN } from './hide-secrets';
export { templateValue, TemplateError } from './templates';
export { scanTemplates, type PluginSectionCheck, type PluginSectionTool, type TemplateReference, type TemplateScan } from '@oncegate/contracts';
export { sectionSchema } from './section-schema';
