import { Catch, type INestMicroservice, type LoggerService, type LogLevel, type RpcExceptionFilter } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import type { EventStoreTransport } from './event-store.transport';

/**
 * Hands an error a handler throws to the transport as it was thrown. Nest's own handling logs it and replaces it
 * with `{ status: 'error', message: 'Internal server error' }`, which would hide from the transport what it decides
 * on: a store that cannot write makes the event wait for it instead of using up its attempts, and a parked event keeps
 * the handler's own error for the operator.
 */
@Catch()
class ThrownAsIs implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}

/**
 * A Nest microservice whose `@EventPattern` handlers are fed by `transport`, their errors reaching it as thrown
 * (see {@link ThrownAsIs}). Listening is left to the caller (`app.listen()`).
 */
export async function createEventStoreMicroservice(
  module: Parameters<typeof NestFactory.createMicroservice>[0],
  transport: EventStoreTransport,
  options: { readonly logger?: LoggerService | LogLevel[] | false } = {},
): Promise<INestMicroservice> {
  const app = await NestFactory.createMicroservice(module, { ...options, strategy: transport });
  app.useGlobalFilters(new ThrownAsIs());
  return app;
}
