/**
 * Worker thread of `verify-pool.ts`: parses and hashes batches of event lines — given as lines, or as a block
 * of the export's raw bytes cut at a line break, which it decodes and splits itself — and answers each batch
 * in one message of columns whose buffers it transfers (the block's buffer goes back too). It holds no state
 * between batches; the ordered checks stay on the verifier's thread.
 */
import { parentPort } from 'node:worker_threads';
import { analyzeBlock, analyzeLines, batchTransferList, type AnalyzedBatch } from './line-analysis';

export type AnalyzeRequest =
  | { readonly id: number; readonly texts: readonly string[] }
  | { readonly id: number; readonly block: ArrayBuffer };

export type AnalyzeResponse =
  | { readonly id: number; readonly batch: AnalyzedBatch; readonly block?: ArrayBuffer }
  | { readonly id: number; readonly error: unknown; readonly block?: ArrayBuffer };

const port = parentPort;
if (port === null) throw new Error('verify-worker.ts runs as a worker thread only');

port.on('message', (request: AnalyzeRequest) => {
  const block = 'block' in request ? request.block : undefined;
  let response: AnalyzeResponse;
  const transfer: ArrayBuffer[] = block === undefined ? [] : [block];
  try {
    const batch = block === undefined ? analyzeLines((request as { texts: readonly string[] }).texts) : analyzeBlock(new Uint8Array(block));
    transfer.push(...batchTransferList(batch));
    response = block === undefined ? { id: request.id, batch } : { id: request.id, batch, block };
  } catch (error) {
    response = block === undefined ? { id: request.id, error } : { id: request.id, error, block };
  }
  port.postMessage(response, transfer);
});
