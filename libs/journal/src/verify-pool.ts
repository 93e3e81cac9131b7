/**
 * A small pool of worker threads that parse and hash batches of export lines (`verify-worker.ts`). The
 * verifier keeps a bounded number of batches in flight and consumes the answers in line order.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LineAnalysis } from './line-analysis';
import type { AnalyzeRequest, AnalyzeResponse } from './verify-worker';

/**
 * Workers the verifier starts when the caller does not say: one per core. The calling thread only splits
 * lines and runs the ordered checks (it idled half the time beside one worker on 2 cores), so leaving it a
 * core of its own measured slower than sharing: 2 cores, 250k events: 1 worker 67k events/s, 2 workers 83k.
 */
export function defaultVerifyWorkers(): number {
  return Math.max(1, availableParallelism());
}

/**
 * Young generation of a worker's heap. The analysis allocates a parsed event per line, all short-lived: at
 * V8's default (16 MiB) a worker spent ~15% of its time in scavenges; 64 MiB made verify ~10% faster for
 * ~50 MiB more RSS per worker (bench/journal.bench.ts, 250k events, 2 cores).
 */
const YOUNG_GENERATION_MB = 64;
/** Workers hold only the batches in flight; a bounded old generation keeps their heaps from growing with the journal. */
const OLD_GENERATION_MB = 256;

interface Pending {
  resolve(results: LineAnalysis[]): void;
  reject(error: unknown): void;
}

/**
 * How to start a worker. From compiled JavaScript: the `.js` file beside this one. From TypeScript sources
 * (tsx in development, vitest): a small script that registers tsx's loader in the worker, then imports
 * `verify-worker.ts`. (`execArgv: ['--import', 'tsx']` is not enough on Node 20: a worker's `--import` hooks
 * do not apply to its own entry file.) tsx is resolved from this package, so any working directory works.
 */
function workerEntry(): { entry: URL | string; eval: boolean } {
  const here = import.meta.url;
  if (!/\.[cm]?ts$/.test(new URL(here).pathname)) return { entry: new URL('./verify-worker.js', here), eval: false };
  const tsxApi = pathToFileURL(tsxEsmApi(createRequire(here))).href;
  const worker = new URL('./verify-worker.ts', here).href;
  const script = `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(worker)}); });`;
  return { entry: script, eval: true };
}

/** The ESM build of `tsx/esm/api` (its CommonJS build cannot register from an evaluated worker script). */
function tsxEsmApi(require: NodeRequire): string {
  const manifest = require.resolve('tsx/package.json');
  const { exports } = require(manifest) as { exports: Record<string, { import?: { default?: string } }> };
  const entry = exports['./esm/api']?.import?.default;
  if (entry === undefined) throw new Error(`tsx (${manifest}) has no ESM export of tsx/esm/api`);
  return join(dirname(manifest), entry);
}

export class VerifyPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: unknown;
  private closing = false;

  constructor(size: number) {
    const { entry, eval: isScript } = workerEntry();
    for (let i = 0; i < size; i += 1) {
      // A larger young generation: the analysis allocates a parsed event per line, all short-lived.
      const worker = new Worker(entry, { eval: isScript, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB, maxOldGenerationSizeMb: OLD_GENERATION_MB } });
      worker.on('message', (response: AnalyzeResponse) => this.settle(response));
      worker.on('error', (error) => this.abort(error));
      worker.on('exit', (code) => {
        if (!this.closing && this.pending.size > 0) this.abort(new Error(`journal verify worker exited with code ${code}`));
      });
      this.workers.push(worker);
    }
  }

  get size(): number {
    return this.workers.length;
  }

  /** Parses and hashes `texts` (lines `firstLine`, `firstLine + 1`, …) on the next worker in turn. */
  analyze(texts: readonly string[], firstLine: number): Promise<LineAnalysis[]> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = this.nextId++;
    const worker = this.workers[id % this.workers.length]!;
    return new Promise<LineAnalysis[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request: AnalyzeRequest = { id, firstLine, texts };
      worker.postMessage(request);
    });
  }

  async close(): Promise<void> {
    this.closing = true;
    const workers = this.workers.splice(0);
    await Promise.all(workers.map((worker) => worker.terminate()));
    // Nobody waits for answers that will not come; a dropped batch is not an error.
    this.pending.clear();
  }

  private settle(response: AnalyzeResponse): void {
    const pending = this.pending.get(response.id);
    if (pending === undefined) return;
    this.pending.delete(response.id);
    if ('error' in response) pending.reject(response.error);
    else pending.resolve(response.results);
  }

  private abort(error: unknown): void {
    if (this.closing) return;
    this.failure ??= error;
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}
