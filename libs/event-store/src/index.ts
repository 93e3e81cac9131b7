export type {
  AppendManyEntry,
  AppendOptions,
  AppendResult,
  EventFilter,
  EventHandler,
  EventStore,
  EventLink,
  EventToAppend,
  ExpectedRevision,
  NotifiedSince,
  Lease,
  Claim,
  ConsumerCheckpoint,
  ReadAllOptions,
  ReadAllPage,
  ReadDirection,
  ReadLinksOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
  Subscription,
  SubscriptionStart,
} from './event-store';
export { backoffMs } from './backoff';
export { pause, settledOrAborted } from './abortable';
export { matchesFilter } from './event-filter';
export { newEventId, newTimeOrderedId, pooledRandomBytes } from './event-ids';
export { asBuffer } from './bytes';
export { readAllFrom } from './read-all-from';
export { readLinks } from './read-links';
export type { AllEventsRead, ReadAllFromOptions } from './read-all-from';
export {
  DuplicateEventIdError,
  EventStoreClosedError,
  EventStoreOpenError,
  EventStoreUnavailableError,
  InvalidEventStoreArgumentError,
  WrongExpectedRevisionError,
} from './errors';
export type { EventStoreError, StoreOpenProblem } from './errors';
export {
  expectedRevisionHolds,
  submitAppend,
  submitAppendMany,
  validateAppend,
  validateAppendMany,
  validateCount,
  validateFilter,
  validateInstant,
  validatePosition,
  validateStreamId,
} from './append-validation';
export type { CommitAppend, SerialisedAppend, SerialisedEvent } from './append-validation';
export { runCatchUpSubscription } from './catch-up-subscription';
export type { LiveFeed, LiveSegment, SubscriptionSource } from './catch-up-subscription';
export { CommitListener, NotifiedSubscriptions } from './notified-subscriptions';
export type { CommitReport, NotifiedSubscriptionsOptions } from './notified-subscriptions';
export { canonicalEventText, eventHash, GENESIS_HASH, linkEvents } from './chain';
export type { ChainableEvent, ChainedEventFields, ChainLink, ChainTip } from './chain';
export { eventJson } from './event-json';
export { DEFERRED_WAIT_MS, GroupCommit, holdsForCompany } from './group-commit';
export type { EventJson } from './event-json';
export { groupNames, partitionOf, subscribeAsGroupMember } from './consumer-group';
export type { ConsumerGroupOptions, GroupSubscription } from './consumer-group';
