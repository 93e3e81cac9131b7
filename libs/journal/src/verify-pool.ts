/**
 * A small pool of worker threads that parse and hash batches of export lines (`verify-worker.ts`). The
 * verifier keeps a bounded number of batches in flight and consumes the answers in line order.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { workerEntry } from '@oncegate/event-store/worker-entry';
import type { AnalyzedBatch } from './line-analysis';
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
 * Young generation of a worker's heap. The analysis allocates a parsed event per line, all short-lived, and
 * now that a worker decodes its block line by line nothing it allocates outlives a batch: 16 MiB measured as
 * fast as 64 MiB (bench/journal.bench.ts, 1M events, 2 cores) for ~40 MiB less RSS per worker; 8 MiB was
 * slower (more scavenges).
 */
const YOUNG_GENERATION_MB = 16;
/** Workers hold only the batches in flight; a bounded old generation keeps their heaps from growing with the journal. */
const OLD_GENERATION_MB = 256;

/** A batch's answer; `block` is the buffer of a block sent with `analyzeBlock`, given back. */
export interface PoolAnswer {
  readonly batch: AnalyzedBatch;
  readonly block?: ArrayBuffer;
}

interface Pending {
  resolve(answer: PoolAnswer): void;
  reject(error: unknown): void;
}

export class VerifyPool {
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: unknown;
  private closing = false;

  constructor(size: number) {
    const { entry, eval: isScript } = workerEntry(import.meta.url, 'verify-worker');
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

  /** Parses and hashes `texts` on the next worker in turn. */
  analyze(texts: readonly string[]): Promise<PoolAnswer> {
    return this.send((id) => ({ id, texts }), []);
  }

  /**
   * Decodes, splits, parses and hashes a block of export bytes (`linesOfBlock`) on the next worker in turn.
   * The buffer is transferred (unusable here until the answer gives it back), so it must hold the block alone.
   */
  analyzeBlock(block: ArrayBuffer): Promise<PoolAnswer> {
    return this.send((id) => ({ id, block }), [block]);
  }

  private send(request: (id: number) => AnalyzeRequest, transfer: ArrayBuffer[]): Promise<PoolAnswer> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = this.nextId++;
    const worker = this.workers[id % this.workers.length]!;
    return new Promise<PoolAnswer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage(request(id), transfer);
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
    else pending.resolve(response.block === undefined ? { batch: response.batch } : { batch: response.batch, block: response.block });
  }

  private abort(error: unknown): void {
    if (this.closing) return;
    this.failure ??= error;
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}
