// The host's side of the dispatcher kit, for this repository's processes and built-in channels only (not in the
// package's exports): the dispatcher that runs every channel, how a process hosts channels, and the host's view
// of an attempt that the HTTP and SSH channels read.
export { ChannelDispatcher, notSent, textResult, type AttemptRecord } from './channel-dispatcher';
export { channelNotices, channelNoticeStream, type ChannelNoticedData } from './channel-notices';
export { channelOptionsReader, type ChannelOptionsCheck, type ChannelOptionsReader, type ChannelOptionsSource } from './channel-options';
export { contractCheck, publishedSchemas, type PublishedChannelSchemas } from './channel-schemas';
export { defineHostChannel, hostingOf, KitDispatcherModule, sectionCheckOf, type ChannelHosting, type StandaloneDependencies } from './define-channel';
export { dispatcherService, hostDispatchers, type ChannelStart, type DispatchChannel, type Dispatchers, type StartedChannel } from './dispatchers';
export type { HostAttempt, HostChannelContext, HostChannelDefinition, HostChannelDriver } from './host-channel';
export { KitDispatcher } from './kit-dispatcher';
export { vaultRefusal } from './vault-refusal';
