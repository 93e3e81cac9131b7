import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Module, UseInterceptors, type CallHandler, type ExecutionContext, type INestMicroservice, type NestInterceptor } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore, type SqliteEventStore } from '@oncegate/event-store-sqlite';
/* eslint-disable-next-line @nx/enforce-module-boundaries -- the polling the gateway's tests use */
import { eventually } from '../../../test/support/journal';
import { createEventStoreMicroservice, directEventHandlers } from './event-store.microservice';
import { EventStoreTransport, type EventStoreContext } from './event-store.transport';

/** What each handler saw, and which interceptors ran around which handler. */
const seen: string[] = [];

class Noting implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler) {
    seen.push(`intercepted ${context.getHandler().name}`);
    return next.handle();
  }
}

@Controller()
class Plain {
  @EventPattern('Dispatched')
  onDispatched(@Payload() event: RecordedEvent): void {
    seen.push(`dispatched ${event.streamId}`);
  }

  @EventPattern('Settled')
  onSettled(@Ctx() context: EventStoreContext, @Payload() event: unknown): void {
    seen.push(`settled ${(event as RecordedEvent).streamId} by ${context.consumer}`);
  }

  /** A property of the payload is Nest's to extract. */
  @EventPattern('Renamed')
  onRenamed(@Payload('streamId') streamId: string): void {
    seen.push(`renamed ${streamId}`);
  }
}

@Controller()
@UseInterceptors(Noting)
class Intercepted {
  @EventPattern('Audited')
  onAudited(@Payload() event: RecordedEvent): void {
    seen.push(`audited ${event.streamId}`);
  }
}

@Module({ controllers: [Plain, Intercepted] })
class TestModule {}

@Module({ controllers: [Plain, Intercepted], providers: [{ provide: APP_INTERCEPTOR, useClass: Noting }] })
class GloballyInterceptedModule {}

describe('event handlers called as their methods', () => {
  let dir: string;
  let store: SqliteEventStore;
  let transport: EventStoreTransport;
  let app: INestMicroservice | undefined;

  beforeEach(() => {
    seen.length = 0;
    dir = mkdtempSync(join(tmpdir(), 'oncegate-direct-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    transport = new EventStoreTransport({ store, consumer: 'recorder' });
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    await transport.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function deliverAll(): Promise<void> {
    for (const [stream, type] of [['execution-1', 'Dispatched'], ['execution-2', 'Settled'], ['execution-3', 'Renamed'], ['execution-4', 'Audited']]) {
      await store.appendToStream(stream!, [{ type: type!, data: {} }]);
    }
    await eventually(() => (seen.some((line) => line.startsWith('audited')) ? true : undefined), 5_000, 'the last event handled');
  }

  it('given handlers that use nothing of Nest per call, then they are called directly, and the others still through Nest', async () => {
    app = await createEventStoreMicroservice(TestModule, transport, { logger: false });
    expect([...directEventHandlers(app).keys()].sort()).toEqual(['Dispatched', 'Settled']);
    await app.listen();
    await deliverAll();
    // Each handler got what its parameters ask for, whichever way it was called; the interceptor ran where declared.
    expect(seen).toEqual(['dispatched execution-1', 'settled execution-2 by recorder', 'renamed execution-3', 'intercepted onAudited', 'audited execution-4']);
  });

  it.each([
    ['set on the app after it was made', TestModule, (made: INestMicroservice) => void made.useGlobalInterceptors(new Noting())],
    ['provided by a module (APP_INTERCEPTOR)', GloballyInterceptedModule, () => undefined],
  ] as const)('given a global interceptor %s, then every handler goes through Nest and meets it', async (_how, module, addInterceptor) => {
    app = await createEventStoreMicroservice(module, transport, { logger: false });
    addInterceptor(app);
    await app.listen();
    await deliverAll();
    expect(seen).toEqual([
      'intercepted onDispatched',
      'dispatched execution-1',
      'intercepted onSettled',
      'settled execution-2 by recorder',
      'intercepted onRenamed',
      'renamed execution-3',
      'intercepted onAudited',
      'intercepted onAudited',
      'audited execution-4',
    ]);
  });
});
