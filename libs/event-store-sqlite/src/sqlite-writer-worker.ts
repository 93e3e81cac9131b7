/**
 * The writer thread of a SQLite store (`writer-thread.ts` starts it): it holds the store's write connection
 * (`writer-connection.ts`), so a commit's fsync does not block the calling thread's event loop while the calling
 * thread has other work. Whatever arrived while the previous transaction was being committed is written as one
 * transaction (group commit), answered in one message.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { WriterConnection } from './writer-connection';
import type { WriteItem, WriterConfig, WriterReply, WriterRequest } from './writer-protocol';

const port = parentPort;
if (port === null) throw new Error('sqlite-writer-worker.ts runs as a worker thread only');
const connection = new WriterConnection(workerData as WriterConfig);

const queue: WriteItem[] = [];
let closing = false;

function accept(request: WriterRequest): void {
  if (request.kind === 'write') for (const item of request.items) queue.push(item);
  else closing = true;
}

port.on('message', (request: WriterRequest) => {
  accept(request);
  // Everything that arrived while the previous transaction committed is the next one, until nothing is waiting.
  for (;;) {
    for (let next = receiveMessageOnPort(port); next !== undefined; next = receiveMessageOnPort(port)) accept(next.message as WriterRequest);
    if (queue.length === 0) break;
    const reply = connection.commitTogether(queue.splice(0));
    port.postMessage(reply);
  }
  if (closing) {
    connection.close();
    port.postMessage({ kind: 'closed' } satisfies WriterReply);
    port.close();
  }
});
