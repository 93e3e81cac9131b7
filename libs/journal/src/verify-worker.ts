/**
 * Worker thread of `verify-pool.ts`: parses and hashes batches of event lines, answering each batch in one
 * message. It holds no state between batches; the ordered checks stay on the verifier's thread.
 */
import { parentPort } from 'node:worker_threads';
import { analyzeLine, type LineAnalysis } from './line-analysis';

export interface AnalyzeRequest {
  readonly id: number;
  /** 1-based line number of `texts[0]`. */
  readonly firstLine: number;
  readonly texts: readonly string[];
}

export type AnalyzeResponse =
  | { readonly id: number; readonly results: LineAnalysis[] }
  | { readonly id: number; readonly error: unknown };

const port = parentPort;
if (port === null) throw new Error('verify-worker.ts runs as a worker thread only');

port.on('message', (request: AnalyzeRequest) => {
  let response: AnalyzeResponse;
  try {
    const { texts, firstLine } = request;
    const results = new Array<LineAnalysis>(texts.length);
    for (let i = 0; i < texts.length; i += 1) results[i] = analyzeLine(texts[i]!, firstLine + i);
    response = { id: request.id, results };
  } catch (error) {
    response = { id: request.id, error };
  }
  port.postMessage(response);
});
