import { canonicalJson } from '@oncegate/fingerprint';
import type { DeliverySettlement, DeliveryWatch } from '@oncegate/service-result-delivery';
import { parseEventId } from './sse-event-id';

type RequestId = string | number;

interface PendingResponse {
  /** Tool name and arguments: a repeat of the same call is no proof that the client read the first answer. */
  readonly repeatKey: string | undefined;
  /** `<stream id>.<sequence>` of the stored response, once stored for resumption. */
  eventId: string | undefined;
  written: boolean;
  readonly watch: DeliveryWatch;
  readonly settle: (settlement: DeliverySettlement) => void;
}

/** Unsettled entries kept per connection; beyond it the oldest is settled as unproven. */
const MAX_PENDING = 1_000;

/**
 * What one MCP session (or stdio connection) proves about the responses written on it (docs/design.md section 5). The
 * server only knows what it wrote, so a written response is not delivered: it waits for evidence of receipt —
 * a later message from the client received after the response was fully written, or a `Last-Event-ID` at or
 * past the response's event on a resumed stream. A cancel for the request after it was written proves the
 * client gave up; a repeat of the same call proves nothing either way. Each watch settles once.
 */
export class SessionDeliveries {
  private readonly pending = new Map<string, PendingResponse>();

  /** `connection` names where a later message came from in the recorded evidence, e.g. `MCP session`. */
  constructor(private readonly connection: string) {}

  /** A tools/call arrived: its response will be watched until evidence settles it. */
  expect(requestId: RequestId, call: { name?: unknown; arguments?: unknown } | undefined): DeliveryWatch {
    this.settle(requestId, { kind: 'unproven', reason: `a new request with the same id came on the same ${this.connection} before anything proved receipt` });
    if (this.pending.size >= MAX_PENDING) {
      const [oldest] = this.pending.keys();
      const reason = `more than ${MAX_PENDING} answers on the same ${this.connection} awaited evidence; the oldest stopped being watched`;
      if (oldest !== undefined) this.settleKey(oldest, { kind: 'unproven', reason });
    }
    let settle!: (settlement: DeliverySettlement) => void;
    const settled = new Promise<DeliverySettlement>((resolve) => (settle = resolve));
    const entry: PendingResponse = { repeatKey: repeatKeyOf(call), eventId: undefined, written: false, watch: { settled }, settle };
    this.pending.set(requestKey(requestId), entry);
    return entry.watch;
  }

  watchOf(requestId: RequestId): DeliveryWatch | undefined {
    return this.pending.get(requestKey(requestId))?.watch;
  }

  /** The response to `requestId` was stored for resumption under `eventId`. */
  stored(requestId: RequestId, eventId: string): void {
    const entry = this.pending.get(requestKey(requestId));
    if (entry !== undefined) entry.eventId = eventId;
  }

  /**
   * The response stream a request was answered on ended, normally (everything on it was written) or cut short.
   * Normally with the response stored means written; otherwise the response did not go out on it.
   */
  streamEnded(requestId: RequestId, finishedNormally: boolean): void {
    const entry = this.pending.get(requestKey(requestId));
    if (entry === undefined || entry.written) return;
    if (finishedNormally && entry.eventId !== undefined) entry.written = true;
    else {
      this.settle(requestId, {
        kind: 'not_delivered',
        reason: finishedNormally ? 'the response stream ended before the result was written' : 'the response stream closed before the result was written',
      });
    }
  }

  /** The response was handed completely to the transport; from now on a later message is evidence. */
  written(requestId: RequestId): void {
    const entry = this.pending.get(requestKey(requestId));
    if (entry !== undefined) entry.written = true;
  }

  /** A message from the client on this connection; called before the message is handled. */
  received(message: unknown): void {
    const m = message as { method?: unknown; params?: { requestId?: unknown; name?: unknown; arguments?: unknown } } | null;
    const method = typeof m?.method === 'string' ? m.method : 'response';
    const cancelled = cancelledRequestId(message);
    // Only a written answer is settled by a repeat: the key of the call is written out when one is there to compare.
    let repeatKey: string | undefined;
    for (const [key, entry] of [...this.pending]) {
      if (cancelled !== undefined && key === requestKey(cancelled)) {
        if (entry.written) {
          this.settleKey(key, { kind: 'not_delivered', reason: 'the client cancelled the request after its response was written (it gave up waiting)' });
        }
      } else if (!entry.written) {
        continue;
      } else if (method === 'tools/call' && entry.repeatKey !== undefined && (repeatKey ??= repeatKeyOf(m?.params)) === entry.repeatKey) {
        // The same call again: the client may not have the first answer. The repeat gets its own.
        this.settleKey(key, { kind: 'unproven', reason: `the same call came again on the same ${this.connection}, which proves nothing either way` });
      } else {
        this.settleKey(key, {
          kind: 'delivered',
          evidence: `a later ${method} message on the same ${this.connection}, received after the response was written`,
        });
      }
    }
  }

  /** A stream resumed with `Last-Event-ID`: the client holds every event of that stream up to it. */
  resumedAfter(lastEventId: string): void {
    const last = parseEventId(lastEventId);
    if (last === undefined) return;
    for (const [key, entry] of [...this.pending]) {
      const event = entry.eventId === undefined ? undefined : parseEventId(entry.eventId);
      if (event !== undefined && event.streamId === last.streamId && event.sequence <= last.sequence) {
        this.settleKey(key, {
          kind: 'delivered',
          evidence: `Last-Event-ID ${lastEventId} on a resumed stream, at or past the response's event ${entry.eventId}`,
        });
      }
    }
  }

  /**
   * The connection ended, or the gateway stops watching it: what is still unproven stays so, and each answer is
   * recorded as unproven with `reason`.
   */
  end(reason = `the ${this.connection} closed before anything proved receipt`): void {
    for (const key of [...this.pending.keys()]) this.settleKey(key, { kind: 'unproven', reason });
  }

  private settle(requestId: RequestId, settlement: DeliverySettlement): void {
    this.settleKey(requestKey(requestId), settlement);
  }

  private settleKey(key: string, settlement: DeliverySettlement): void {
    const entry = this.pending.get(key);
    if (entry === undefined) return;
    this.pending.delete(key);
    entry.settle(settlement);
  }
}

/**
 * The request a message the server sends answers (a JSON-RPC result or error with an id), or `undefined`. The
 * messages are the server's own, so their shape is known: a look at the members, not the SDK's schema checks
 * (which parse the whole result, and ran on every message sent, several times).
 */
export function answeredId(message: object): RequestId | undefined {
  const { id } = message as { id?: unknown };
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  return 'result' in message || 'error' in message ? id : undefined;
}

/** The request a client's `notifications/cancelled` names, or `undefined` for any other message. */
export function cancelledRequestId(message: unknown): RequestId | undefined {
  const m = message as { method?: unknown; params?: { requestId?: unknown } } | null;
  if (m?.method !== 'notifications/cancelled') return undefined;
  const id = m.params?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** JSON-RPC ids compare by type and value: `1` and `"1"` are different requests. */
export function requestKey(requestId: RequestId): string {
  return JSON.stringify(requestId);
}

function repeatKeyOf(call: { name?: unknown; arguments?: unknown } | undefined): string | undefined {
  if (typeof call?.name !== 'string') return undefined;
  try {
    return `${call.name}\u0000${canonicalJson(call.arguments ?? {})}`;
  } catch {
    return undefined;
  }
}
