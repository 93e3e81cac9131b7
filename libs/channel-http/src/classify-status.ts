/** What a status code says about the outcome of the request that received it. */
export type StatusOutcome = 'succeeded' | 'failed' | 'unknown';

/** Statuses an intermediary (proxy, load balancer) sends when the origin did not answer it in time or sanely. */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 504]);

/**
 * 2xx succeeded; 3xx (never followed), 4xx and 5xx `failed`: the target answered with an error. Either way the answer
 * is definite and the execution `completed` (an error answer is told with `isError`, and the target may still have
 * acted). 502 and 504 are neither: they come from an intermediary that forwarded the request, so the origin may have
 * acted and its answer is missing. They are unknown.
 */
export function classifyStatus(status: number): StatusOutcome {
  if (GATEWAY_STATUSES.has(status)) return 'unknown';
  return status >= 200 && status < 300 ? 'succeeded' : 'failed';
}
