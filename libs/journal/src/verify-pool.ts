/**
 * A small pool of worker threads that parse and hash batches of export lines (`verify-worker.ts`). The
 * verifier keeps a bounded number of batches in flight and consumes the answers in line order.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LineAnalysis } from './line-analysis';
import type { AnalyzeRequest, AnalyzeResponse } from './verify-worker';

/** Workers the verifier starts when the caller does not say: every core but the one reading the file, at least 1. */
export function defaultVerifyWorkers(): number {
  return Math.max(1, availableParallelism() - 1);
}

interface Pending {
  resolve(results: LineAnalysis[]): void;
  reject(error: unknown): void;
}

/**
 * The worker's entry. From TypeScript sources (tsx in development, vitest) the worker loads the `.ts` file
 * through tsx's loader, resolved from this package so it works from any working directory; from compiled
 * JavaScript it loads the `.js` file beside this one.
 */
function workerEntry(): { url: URL; execArgv: string[] } {
  const here = import.meta.url;
  if (!/\.[cm]?ts$/.test(new URL(here).pathname)) return { url: new URL('./verify-worker.js', here), execArgv: [] };
  const tsx = pathToFileURL(createRequire(here).resolve('tsx')).href;
  return { url: new URL('./verify-worker.ts', here), execArgv: ['--import', tsx] };
}

export class VerifyPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: unknown;
  private closing = false;

  constructor(size: number) {
    const { url, execArgv } = workerEntry();
    for (let i = 0; i < size; i += 1) {
      const worker = new Worker(url, { execArgv });
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
