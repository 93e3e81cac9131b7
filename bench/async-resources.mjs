/**
 * Preloaded (`node --import`) into a server by `npm run bench -- gateway --promises`: counts the asynchronous
 * resources the calling thread creates (promises, `process.nextTick` callbacks, `setImmediate`s, timers, by their
 * `async_hooks` type) and the POST requests it has been sent, and prints both on stdout every quarter of a second as
 * one line, `async-resources posts=<n> PROMISE=<n> …`, counted since the start. The bench divides what two lines
 * differ by: resources per call. A promise hook slows every promise down, so the other figures of such a run are
 * not those of a plain one.
 */
import { createHook } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  const counts = new Map();
  let posts = 0;
  const hook = createHook({
    init(_id, type) {
      counts.set(type, (counts.get(type) ?? 0) + 1);
    },
  });
  hook.enable();
  diagnostics.subscribe('http.server.request.start', ({ request }) => {
    if (request.method === 'POST') posts += 1;
  });
  setInterval(() => {
    // The line itself is not counted.
    hook.disable();
    process.stdout.write(`async-resources posts=${posts} ${[...counts].map(([type, n]) => `${type}=${n}`).join(' ')}\n`);
    hook.enable();
  }, 250).unref();
}
