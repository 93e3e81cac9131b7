/** What a status code says about the outcome of the request that received it. */
export type StatusOutcome = 'succeeded' | 'failed' | 'unknown';

/** Statuses an intermediary (proxy, load balancer) sends when the origin did not answer it in time or sanely. */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 504]);

/**
 * 2xx succeeded; 3xx (never followed), 4xx and 5xx failed — the target answered and decided — except 502 and 504:
 * those come from an intermediary that forwarded the request, so the origin may have acted. They are unknown.
 */
export function classifyStatus(status: number): StatusOutcome {
  if (GATEWAY_STATUSES.has(status)) return 'unknown';
  return status >= 200 && status < 300 ? 'succeeded' : 'failed';
}
