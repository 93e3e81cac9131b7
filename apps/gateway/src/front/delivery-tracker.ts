import type { ExecutionId } from '@oncegate/domain';

/**
 * What the transport proved about a call's response: received (with the evidence), not delivered (the
 * transport closed before writing it, or the client gave up on it), or nothing either way — written, perhaps,
 * but never acknowledged; nothing is recorded then, and a matching call gets the stored result.
 */
export type DeliverySettlement =
  | { readonly kind: 'delivered'; readonly evidence: string }
  | { readonly kind: 'not_delivered'; readonly reason: string }
  | { readonly kind: 'unproven' };

export interface DeliveryWatch {
  readonly settled: Promise<DeliverySettlement>;
}

/**
 * Which executions have a caller waiting on an open transport in this process. Result delivery uses it to
 * tell "someone will receive this outcome" from "the caller is gone" (docs/design.md section 5: the server can only
 * know what it wrote).
 */
export class DeliveryTracker {
  private readonly live = new Map<string, number>();

  register(executionId: ExecutionId): () => void {
    this.live.set(executionId, (this.live.get(executionId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.live.get(executionId) ?? 1) - 1;
      if (left <= 0) this.live.delete(executionId);
      else this.live.set(executionId, left);
    };
  }

  hasCaller(executionId: string): boolean {
    return this.live.has(executionId);
  }
}
