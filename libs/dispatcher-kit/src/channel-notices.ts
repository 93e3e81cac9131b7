import { Logger } from '@nestjs/common';
import { newEventId, type EventStore } from '@oncegate/event-store';
import { isoNow, type Clock } from '@oncegate/execution-journal';
import type { ChannelNotice } from './channel-definition';

/** The stream of a channel's notices: `channel-<name>`. */
export function channelNoticeStream(channel: string): string {
  return `channel-${channel}`;
}

/**
 * What a channel noticed about its target outside any one call (an upstream said its tools changed, a tool became held
 * or matches its contract again), as `ChannelNoticed` records it on the channel's stream: for the operator and the
 * analyst, and for the bus like every event.
 */
export interface ChannelNoticedData {
  /** The channel's name (`mcp`). */
  readonly channel: string;
  /** The dispatcher instance that noticed it. */
  readonly dispatcherId: string;
  /** What kind of notice, `[a-z][a-z0-9_]*` (`upstream_tools_changed`). */
  readonly kind: string;
  /** In words, at most 500 characters, secrets hidden by the channel. */
  readonly message: string;
  /** The facts, as plain JSON of at most 8 KiB; `null` when none. */
  readonly details: Readonly<Record<string, unknown>> | null;
  readonly noticedAt: string;
}

const KIND = /^[a-z][a-z0-9_]{0,63}$/;
const MESSAGE_CHARS = 500;
const DETAILS_BYTES = 8 * 1024;

/**
 * The `notice` a channel is given when it opens: checks what it is told, then appends it without making the channel
 * wait; a notice the store could not take is logged (the next one is not held back by it). A notice that breaks the
 * rules is refused with a log line saying which, never thrown at the channel.
 */
export function channelNotices(store: EventStore, clock: Clock, channel: string, dispatcherId: string): { notice(notice: ChannelNotice): void; flushed(): Promise<void> } {
  const log = new Logger(`dispatcher-${channel}`);
  let writing: Promise<void> = Promise.resolve();
  const notice = (given: ChannelNotice): void => {
    const data = noticeData(channel, dispatcherId, given, isoNow(clock));
    if (typeof data === 'string') {
      log.warn(`a notice of the ${channel} channel was not recorded: ${data}`);
      return;
    }
    const id = newEventId();
    const event = { id, type: 'ChannelNoticed', data: data as unknown as Record<string, unknown>, metadata: { eventId: id, actor: `service:dispatcher-${channel}`, recordedAt: data.noticedAt, schemaVersion: 1 } };
    writing = writing
      .then(() => store.appendToStream(channelNoticeStream(channel), [event]))
      .then(
        () => undefined,
        (error: unknown) => log.warn(`a notice of the ${channel} channel (${data.kind}) was not recorded: ${(error as Error).message}`),
      );
  };
  return { notice, flushed: () => writing };
}

/** The event's data, or why the notice is refused. */
export function noticeData(channel: string, dispatcherId: string, given: ChannelNotice, now: string): ChannelNoticedData | string {
  if (typeof given !== 'object' || given === null) return 'a notice is an object { kind, message, details? }';
  if (typeof given.kind !== 'string' || !KIND.test(given.kind)) return `kind ${JSON.stringify(given.kind)} is not [a-z][a-z0-9_]* of at most 64 characters`;
  if (typeof given.message !== 'string' || given.message.trim() === '') return `kind ${given.kind}: the message must be a non-empty string`;
  let details: Record<string, unknown> | null = null;
  if (given.details !== undefined) {
    let json: string | undefined;
    try {
      json = JSON.stringify(given.details);
    } catch (error) {
      return `kind ${given.kind}: details are not JSON (${(error as Error).message})`;
    }
    if (json === undefined || typeof given.details !== 'object' || given.details === null || Array.isArray(given.details)) return `kind ${given.kind}: details must be a JSON object`;
    if (Buffer.byteLength(json) > DETAILS_BYTES) return `kind ${given.kind}: details are ${Buffer.byteLength(json)} bytes of JSON, more than ${DETAILS_BYTES}`;
    details = JSON.parse(json) as Record<string, unknown>;
  }
  return { channel, dispatcherId, kind: given.kind, message: given.message.slice(0, MESSAGE_CHARS), details, noticedAt: now };
}
