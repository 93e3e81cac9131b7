/**
 * Preloaded (`node --import`) into a server by `npm run bench -- gateway --stages`: where a call's time goes when
 * calls come one at a time. Each POST that sends a request to the target is followed from its arrival to its
 * response's end through marks the server passes anyway, with the calling thread's busy time (event-loop
 * utilisation) at each: the request's body read, the response's head and each write, every message to and from a
 * worker thread (the SQLite store's writer), every transaction the calling thread opens and commits on a SQLite file
 * (with SQL or a prepared statement) and each commit's return, and the request to the target (created, sent, answered,
 * its body read), from Node's and undici's diagnostics channels. A POST that starts while another is in flight is
 * dropped, so only calls at concurrency 1 count. On SIGUSR2 it writes `<CALL_STAGES_DIR>/stages-<pid>.json`: for the
 * most common sequence of marks, the median time of each mark after the request's arrival and the median busy time of
 * the calling thread up to it.
 */
import diagnostics from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sqlite from 'node:sqlite';
import { Worker, isMainThread } from 'node:worker_threads';

/** The last calls kept: enough for a phase at concurrency 1. */
const KEPT = 5_000;

if (isMainThread && process.env.CALL_STAGES_DIR) {
  const done = [];
  let current;
  let lastEnd;
  const busy = () => performance.eventLoopUtilization().active;
  const mark = (name) => {
    if (current !== undefined) current.marks.push([name, performance.now() - current.t0, busy() - current.busy0]);
  };

  diagnostics.subscribe('http.server.request.start', ({ request }) => {
    if (request.method !== 'POST') return;
    const now = performance.now();
    const started = {
      t0: now,
      busy0: busy(),
      marks: [],
      overlapped: current !== undefined,
      gap: lastEnd === undefined ? undefined : [now - lastEnd.t, busy() - lastEnd.busy],
    };
    if (current !== undefined) current.overlapped = true;
    current = started;
    request.once('end', () => current === started && mark('request body read'));
  });
  diagnostics.subscribe('http.server.response.finish', () => {
    if (current === undefined) return;
    mark('response finished');
    lastEnd = { t: performance.now(), busy: busy() };
    if (!current.overlapped && current.marks.some(([name]) => name === 'target request created')) done.push(current);
    if (done.length > KEPT) done.shift();
    current = undefined;
  });
  diagnostics.subscribe('undici:request:create', () => mark('target request created'));
  diagnostics.subscribe('undici:client:sendHeaders', () => mark('target request sent'));
  diagnostics.subscribe('undici:request:headers', () => mark('target answered'));
  diagnostics.subscribe('undici:request:trailers', () => mark('target answer read'));

  const { writeHead, write } = http.ServerResponse.prototype;
  http.ServerResponse.prototype.writeHead = function (...args) {
    mark('response head');
    return writeHead.apply(this, args);
  };
  http.ServerResponse.prototype.write = function (...args) {
    mark('response write');
    return write.apply(this, args);
  };

  const { postMessage, on } = Worker.prototype;
  const heard = new WeakSet();
  Worker.prototype.postMessage = function (...args) {
    mark('to the writer thread');
    return postMessage.apply(this, args);
  };
  Worker.prototype.on = function (event, listener) {
    if (event === 'message' && !heard.has(this)) {
      heard.add(this);
      on.call(this, 'message', () => mark('from the writer thread'));
    }
    return on.call(this, event, listener);
  };

  // A transaction's start and end, run as SQL or as a prepared statement (the store's own write connection), and the
  // commit's return: the step from COMMIT to its return is the WAL's write and, at the store's level, its fsync.
  const transactionMarked = (sql, run) => {
    if (sql !== 'BEGIN IMMEDIATE' && sql !== 'COMMIT') return run();
    mark(`SQLite ${sql} (calling thread)`);
    const result = run();
    if (sql === 'COMMIT') mark('SQLite COMMIT returned (calling thread)');
    return result;
  };
  const { exec } = sqlite.DatabaseSync.prototype;
  sqlite.DatabaseSync.prototype.exec = function (sql) {
    return transactionMarked(sql, () => exec.call(this, sql));
  };
  const { run } = sqlite.StatementSync.prototype;
  sqlite.StatementSync.prototype.run = function (...args) {
    return transactionMarked(this.sourceSQL, () => run.apply(this, args));
  };

  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  };
  process.on('SIGUSR2', () => {
    const sequences = new Map();
    for (const call of done) {
      const key = call.marks.map(([name]) => name).join('\n');
      const same = sequences.get(key);
      if (same === undefined) sequences.set(key, [call]);
      else same.push(call);
    }
    const [, calls = []] = [...sequences].sort((a, b) => b[1].length - a[1].length)[0] ?? [];
    const gaps = done.flatMap((call) => (call.gap === undefined ? [] : [call.gap]));
    const summary = {
      calls: done.length,
      sameSequence: calls.length,
      marks: calls.length === 0 ? [] : calls[0].marks.map(([name], i) => ({ name, atMs: median(calls.map((c) => c.marks[i][1])), busyMs: median(calls.map((c) => c.marks[i][2])) })),
      gapMs: gaps.length === 0 ? null : median(gaps.map(([t]) => t)),
      gapBusyMs: gaps.length === 0 ? null : median(gaps.map(([, b]) => b)),
    };
    writeFileSync(join(process.env.CALL_STAGES_DIR, `stages-${process.pid}.json`), JSON.stringify(summary));
  });
}
