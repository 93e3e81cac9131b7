import { describeEventStoreContract } from '@oncegate/event-store/testing';
import { openKurrentDbEventStore } from './kurrentdb-event-store';
import { InMemoryKurrentDb } from './testing/in-memory-kurrentdb';

/**
 * The shared contract suite run by the KurrentDB adapter on an in-memory stand-in of the client's calls: the adapter's
 * own logic (planning appends, encoding records, positions from the log, compare-and-set documents, subscriptions)
 * against the semantics the client and KurrentDB document. It says nothing of a real server's behaviour; the suite
 * against a server is kurrentdb-event-store.int.spec.ts. The tests between OS processes need a server that two
 * processes share, so they are skipped here.
 */
describeEventStoreContract<InMemoryKurrentDb>('kurrentdb on the in-memory stand-in', {
  async createLocation() {
    return new InMemoryKurrentDb();
  },
  async open(server) {
    // Each open is a client of its own: two stores on one location are two connections to one server.
    return openKurrentDbEventStore({ client: server.client(), namespace: 'contract', pollIntervalMs: 200 });
  },
});
