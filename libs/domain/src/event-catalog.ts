/**
 * Every event type the store holds, on which streams, at which payload version: the execution events of this
 * library and the events other libraries append on their own streams (claims, runs, MCP sessions, agent and
 * approver tokens, approvers' signing keys, the vault, parked events, journal seals). Configuration that names
 * event types (which types go to which Kafka topic) is checked against this list, and docs/events/ holds a JSON
 * Schema of the `data` of each (tools/event-schemas), so a type appended anywhere must be listed here.
 *
 * Pure data: the other libraries own their events' types; this list only names them.
 */
import { EXECUTION_EVENT_SCHEMA_VERSIONS, EXECUTION_EVENT_TYPES } from './events';
import { STREAM_CATEGORIES, type StreamCategory } from './streams';

/**
 * The category of the journal sealer's stream, `journal-seals` (libs/journal `SEAL_STREAM`). It is not one of
 * `STREAM_CATEGORIES`, which names the streams this library builds.
 */
export const SEAL_STREAM_CATEGORY = 'journal';

/** The part of a stream name before its first `-`, for every stream an event type is appended to. */
export type StoredEventCategory = StreamCategory | typeof SEAL_STREAM_CATEGORY;

export interface StoredEventType {
  readonly type: string;
  /** The category of the streams events of this type are appended to (see `STREAM_CATEGORIES`). */
  readonly category: StoredEventCategory;
  /** The current version of its `data`, written into every event's `metadata.schemaVersion`. */
  readonly schemaVersion: number;
}

const entry = (type: string, category: StoredEventCategory, schemaVersion = 1): StoredEventType => ({ type, category, schemaVersion });

/** Every stored event type: the execution events in the order of docs/design.md section 4, then the others by stream. */
export const STORED_EVENT_TYPES: readonly StoredEventType[] = Object.freeze(
  [
    ...EXECUTION_EVENT_TYPES.map((type) => entry(type, STREAM_CATEGORIES.execution, EXECUTION_EVENT_SCHEMA_VERSIONS[type])),
    // The claims committed with an execution's first events (libs/execution-journal intent-claims).
    entry('IntentClaimed', STREAM_CATEGORIES.intent),
    entry('IdempotencyKeyClaimed', STREAM_CATEGORIES.idempotencyKey),
    // The sessions journal of agent runs (libs/host-decisions run-journal).
    entry('RunStarted', STREAM_CATEGORIES.run),
    entry('RunGranted', STREAM_CATEGORIES.run),
    entry('RunEnded', STREAM_CATEGORIES.run),
    // MCP sessions of the HTTP front, restored after a restart (libs/service-gateway front/mcp-http-front).
    entry('SessionStarted', STREAM_CATEGORIES.session),
    entry('SessionClosed', STREAM_CATEGORIES.session),
    // API tokens, stored hashed (libs/host-principals principal-directory).
    entry('AgentTokenIssued', STREAM_CATEGORIES.agent),
    entry('AgentTokenRevoked', STREAM_CATEGORIES.agent),
    entry('ApproverTokenIssued', STREAM_CATEGORIES.approver),
    entry('ApproverTokenRevoked', STREAM_CATEGORIES.approver),
    // Approvers' Ed25519 public keys, which sign decisions taken from the bus (libs/host-principals approver-directory).
    entry('ApproverKeyAdded', STREAM_CATEGORIES.approver),
    entry('ApproverKeyRevoked', STREAM_CATEGORIES.approver),
    // The credential vault's state changes (libs/vault vault-journal).
    entry('VaultInitialized', STREAM_CATEGORIES.vault),
    entry('VaultUnlocked', STREAM_CATEGORIES.vault),
    entry('VaultLocked', STREAM_CATEGORIES.vault),
    entry('CredentialStored', STREAM_CATEGORIES.vault),
    entry('CredentialRemoved', STREAM_CATEGORIES.vault),
    // Events a service's consumer set aside, and their replays (libs/nest-event-store parked-events).
    entry('EventParked', STREAM_CATEGORIES.parked),
    entry('ParkedReplayRequested', STREAM_CATEGORIES.parked),
    entry('ParkedEventHandled', STREAM_CATEGORIES.parked),
    entry('ParkedReplayFailed', STREAM_CATEGORIES.parked),
    // What a channel noticed about its target outside a call (libs/dispatcher-kit channel-notices).
    entry('ChannelNoticed', STREAM_CATEGORIES.channel),
    // Signed seals over the hash chain (libs/journal seal, appended by libs/service-sealer).
    entry('JournalSealed', SEAL_STREAM_CATEGORY),
  ].map((stored) => Object.freeze(stored)),
);

const BY_TYPE: ReadonlyMap<string, StoredEventType> = new Map(STORED_EVENT_TYPES.map((stored) => [stored.type, stored]));

export function isStoredEventType(name: unknown): name is string {
  return typeof name === 'string' && BY_TYPE.has(name);
}

/** The catalog entry of a stored event type; `undefined` for any other name. */
export function storedEventType(name: string): StoredEventType | undefined {
  return BY_TYPE.get(name);
}
