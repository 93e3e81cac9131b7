/**
 * The pause before try `attempt` (0, 1, 2, …) against a store that refused: `baseMs` doubled per try, at most
 * `maxMs`. Every writer that waits for the store (outcomes, subscriptions, the sealer, expected-revision
 * conflicts) paces itself with it.
 */
export function backoffMs(attempt: number, baseMs: number, maxMs = Number.POSITIVE_INFINITY): number {
  // 2 ** 30 already exceeds any pause worth waiting; the cap keeps the product finite.
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(0, attempt), 30));
}
