export type { ChannelAttempt, ChannelContext, ChannelDefinition, ChannelDriver, DispatchRefusal, MarkerFinding, SendOutcome, StatusFinding } from './channel-definition';
export { defineChannel, KitDispatcherModule, type KitChannel, type StandaloneDependencies } from './define-channel';
export { KitDispatcher } from './kit-dispatcher';
export { hideSecrets, HIDDEN } from './hide-secrets';
export { templateValue, templatedSection, TemplateError } from './templates';
export type { PluginSectionCheck } from '@oncegate/contracts';
export { sectionSchema } from './section-schema';
