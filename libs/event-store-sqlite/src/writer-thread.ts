/**
 * Starts and talks to a SQLite store's writer thread (`sqlite-writer-worker.ts`), and tells its owner when the
 * thread stops without being asked to. The thread keeps the process alive only while writes are in flight, so a
 * store left open never holds a finished process.
 */
import { Worker } from 'node:worker_threads';
import { workerEntry } from '@oncegate/event-store/worker-entry';
import type { CommittedReply, WriterConfig, WriterReply, WriterRequest } from './writer-protocol';

export interface WriterThreadEvents {
  /** A transaction's answer. */
  committed(reply: CommittedReply): void;
  /** The thread stopped unasked (an uncaught error, or it exited): nothing more will be answered. */
  stopped(reason: string): void;
}

export class WriterThread {
  private readonly worker: Worker;
  private inFlight = 0;
  private stopped = false;
  private closing: Promise<void> | undefined;
  private onClosed: (() => void) | undefined;

  constructor(config: WriterConfig, private readonly events: WriterThreadEvents) {
    const { entry, eval: isScript } = workerEntry(import.meta.url, 'sqlite-writer-worker');
    this.worker = new Worker(entry, { eval: isScript, workerData: config });
    this.worker.unref();
    this.worker.on('message', (reply: WriterReply) => {
      if (reply.kind === 'closed') {
        this.stopped = true;
        this.onClosed?.();
        return;
      }
      this.inFlight -= reply.ids.length;
      if (this.inFlight === 0) this.worker.unref();
      this.events.committed(reply);
    });
    this.worker.on('error', (error) => this.stop(`it failed: ${error.message}`));
    this.worker.on('exit', (code) => {
      this.stop(`it exited with code ${code}`);
      // A thread that exits while closing has answered everything it was sent, or never will.
      this.onClosed?.();
    });
  }

  /** Whether every write sent has been answered. */
  get idle(): boolean {
    return this.inFlight === 0;
  }

  /** Sends writes; `count` is how many answers they will get. */
  post(request: WriterRequest, count: number): void {
    if (this.inFlight === 0) this.worker.ref();
    this.inFlight += count;
    this.worker.postMessage(request);
  }

  /** Commits what was sent and stops the thread; resolves once every write sent has been answered. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      if (this.stopped) {
        resolve();
        return;
      }
      this.onClosed = resolve;
      this.worker.ref();
      this.worker.postMessage({ kind: 'close' } satisfies WriterRequest);
    });
    return this.closing;
  }

  private stop(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.events.stopped(reason);
  }
}
