import { join } from 'node:path';
import { executionIdOfStream, executionStream, parseExecutionId, type ExecutionAccepted } from '@oncegate/domain';
import { readAllFrom, type EventStore, type RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';

/**
 * Follows a gateway's journal from a second process, reading only what was appended since the last look, so a
 * long fault or fuzz run does not re-read the whole journal after every step. The gateway may be running,
 * killed or restarted meanwhile: the file is opened as any reader would open it.
 */
export class JournalFollower {
  private readonly store: EventStore;
  private position = 0;
  private readonly accepted = new Map<string, ExecutionAccepted['data']>();

  constructor(dataDir: string) {
    this.store = openSqliteEventStore({ file: join(dataDir, 'events.db') });
  }

  /** Reads what was appended since the last call; returns those events. */
  async catchUp(): Promise<RecordedEvent[]> {
    const fresh: RecordedEvent[] = [];
    const events = readAllFrom(this.store, { after: this.position, pageSize: 5000 });
    for await (const event of events) {
      fresh.push(event);
      if (event.type !== 'ExecutionAccepted') continue;
      const executionId = executionIdOfStream(event.streamId);
      if (executionId !== undefined) this.accepted.set(executionId, event.data as ExecutionAccepted['data']);
    }
    this.position = events.position;
    return fresh;
  }

  /** Every `ExecutionAccepted` seen so far, by execution id. */
  acceptedExecutions(): ReadonlyMap<string, ExecutionAccepted['data']> {
    return this.accepted;
  }

  /** One execution's stream read afresh from the file, not from what was followed: what survived a crash. */
  async executionStream(executionId: string): Promise<RecordedEvent[]> {
    return this.store.readStream(executionStream(parseExecutionId(executionId)));
  }

  async close(): Promise<void> {
    await this.store.close();
  }
}
