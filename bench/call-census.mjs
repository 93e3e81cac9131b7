/**
 * Preloaded (`node --import`) into a server by `npm run bench -- gateway --census`: counts how often the calling
 * thread asks for some common pieces of work — text written and read as JSON, copies, hashes and ciphers, dates
 * written and read, abort controllers — and the POST requests it has been sent, and prints both on stdout every quarter
 * of a second as one line, `call-census posts=<n> JSON.stringify=<n> …`, counted since the start. The bench divides
 * what two lines differ by: how many of each a call asks for, a count the machine's load does not move. Each counted
 * function is wrapped, so the other figures of such a run are not those of a plain one.
 */
import crypto from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { syncBuiltinESMExports } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  const counts = new Map();
  let posts = 0;
  let printing = false;
  const count = (name) => {
    if (!printing) counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  const wrap = (owner, key, name) => {
    const original = owner[key];
    owner[key] = function counted(...args) {
      count(name);
      return original.apply(this, args);
    };
  };
  wrap(JSON, 'stringify', 'JSON.stringify');
  wrap(JSON, 'parse', 'JSON.parse');
  wrap(globalThis, 'structuredClone', 'structuredClone');
  wrap(Object, 'entries', 'Object.entries');
  wrap(Object, 'fromEntries', 'Object.fromEntries');
  wrap(Date.prototype, 'toISOString', 'Date.toISOString');
  wrap(Date, 'parse', 'Date.parse');
  wrap(Buffer, 'from', 'Buffer.from');
  wrap(Buffer, 'concat', 'Buffer.concat');
  for (const key of ['hash', 'createHash', 'createHmac', 'createCipheriv', 'createDecipheriv']) wrap(crypto, key, `crypto.${key}`);
  // Named imports of `node:crypto` read the wrapped functions from here on.
  syncBuiltinESMExports();
  const Controller = globalThis.AbortController;
  globalThis.AbortController = class extends Controller {
    constructor() {
      super();
      count('AbortController');
    }
  };
  diagnostics.subscribe('http.server.request.start', ({ request }) => {
    if (request.method === 'POST') posts += 1;
  });
  setInterval(() => {
    // The line itself is not counted (a pipe to the bench is written synchronously).
    printing = true;
    let line = `call-census posts=${posts}`;
    for (const [name, n] of counts) line += ` ${name}=${n}`;
    process.stdout.write(`${line}\n`);
    printing = false;
  }, 250).unref();
}
