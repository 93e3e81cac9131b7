import type { EventId, StreamId } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';

/** The SDK's id of a session's standalone (GET) stream. */
export const STANDALONE_STREAM_ID = '_GET_stream';

/**
 * Event ids are `<sdk stream id>.<sequence>`: the sequence numbers every message of the resumption file, grows in
 * the order messages are stored and is never reused (each write numbers its messages under the file's lock, after
 * the greatest stored number and after the clock, also after old messages are deleted), so within one stream a
 * later message always has a greater one. `-1` names "nothing stored yet".
 */
export function parseEventId(eventId: EventId): { streamId: StreamId; sequence: number } | undefined {
  const match = /^([A-Za-z0-9_-]{1,128})\.(-1|\d{1,15})$/.exec(eventId);
  return match ? { streamId: match[1]!, sequence: Number(match[2]) } : undefined;
}
