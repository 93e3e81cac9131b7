import { createRequire } from 'node:module';

/**
 * A fix, in this process, of a kafkajs 2.2.4 bug (its last release; tulios/kafkajs#1751 and #1704, open upstream).
 *
 * After every answer from a broker, each connection's request queue schedules a check of its pending requests in
 * `throttledUntil - Date.now()` ms. `throttledUntil` is -1 until a broker asks the client to slow down, so the delay is
 * minus the clock's epoch milliseconds: Node 24 prints a TimeoutNegativeWarning at the first one and runs the check after
 * 1 ms, and the check schedules the next one the same way: a 1 ms timer loop on every connection for as long as it is
 * open. The check has nothing to do while no request waits in the queue and no throttle holds, and whatever puts a
 * request in the queue schedules a check of its own (`push`), so that case schedules nothing; every other case runs
 * kafkajs's own code. A warning filter would hide the message and leave the loop.
 */
interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
}

const FIXED = Symbol.for('oncegate.kafkajs.idleQueueCheck');

/** Installs the fix once per process; a kafkajs whose request queue is not the one described is left as it is. */
export function fixIdleRequestQueueChecks(): void {
  const require = createRequire(import.meta.url);
  let prototype: (RequestQueue & { [FIXED]?: true }) | undefined;
  try {
    // The module kafkajs's connections use: `require` resolves it to the same file, hence the same class.
    prototype = (require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueue & { [FIXED]?: true } }).prototype;
  } catch {
    return;
  }
  if (prototype[FIXED] || typeof prototype.scheduleCheckPendingRequests !== 'function') return;
  const schedule = prototype.scheduleCheckPendingRequests;
  prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue) {
    if (this.pending.length === 0 && !(this.throttledUntil > Date.now())) return;
    schedule.call(this);
  };
  prototype[FIXED] = true;
}
