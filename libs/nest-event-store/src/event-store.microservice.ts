import { Catch, type INestMicroservice, type LoggerService, type LogLevel, type RpcExceptionFilter } from '@nestjs/common';
import { EXCEPTION_FILTERS_METADATA, GUARDS_METADATA, INTERCEPTORS_METADATA, PIPES_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE, MetadataScanner, ModulesContainer, NestFactory } from '@nestjs/core';
import { PATTERN_HANDLER_METADATA, PATTERN_METADATA } from '@nestjs/microservices/constants';
import { throwError, type Observable } from 'rxjs';
import type { RecordedEvent } from '@oncegate/event-store';
import type { DirectEventHandler, EventStoreContext, EventStoreTransport } from './event-store.transport';

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

/** Provider tokens of enhancers for every handler (Nest keeps each as `APP_GUARD (UUID: …)` and so on). */
const GLOBAL_ENHANCER_TOKENS = [APP_GUARD, APP_INTERCEPTOR, APP_PIPE, APP_FILTER];

/** The enhancers Nest applies around a handler; a handler with any of them goes through Nest's pipeline. */
const ENHANCERS = [GUARDS_METADATA, INTERCEPTORS_METADATA, PIPES_METADATA, EXCEPTION_FILTERS_METADATA];
/** `PatternHandler.EVENT` of `@nestjs/microservices`: an `@EventPattern` handler. */
const EVENT_HANDLER = 2;
/** `RpcParamtype.PAYLOAD` and `RpcParamtype.CONTEXT`: `@Payload()` and `@Ctx()`. */
const PAYLOAD = 3;
const CONTEXT = 6;

/**
 * A Nest microservice whose `@EventPattern` handlers are fed by `transport`, their errors reaching it as thrown
 * (see {@link ThrownAsIs}). Listening is left to the caller (`app.listen()`).
 *
 * The handlers that need nothing of Nest's per-call pipeline — no guard, interceptor, pipe or filter of their own,
 * a singleton controller, parameters that are the whole `@Payload()` or the `@Ctx()` — are called as their methods
 * (`directEventHandlers`): Nest's context, parameter pipes and exception zone cost several promises and closures per
 * event, and the embedded gateway delivers each call's events to five of them. A global guard, interceptor, pipe
 * or filter — provided by a module, or set on the returned app later — sends every handler through Nest.
 */
export async function createEventStoreMicroservice(
  module: Parameters<typeof NestFactory.createMicroservice>[0],
  transport: EventStoreTransport,
  options: { readonly logger?: LoggerService | LogLevel[] | false } = {},
): Promise<INestMicroservice> {
  const app = await NestFactory.createMicroservice(module, { ...options, strategy: transport });
  app.useGlobalFilters(new ThrownAsIs());
  transport.invokeDirectly(directEventHandlers(app));
  // Nest's app is a proxy that takes no assignment: another proxy turns the direct calls off when enhancers come.
  return new Proxy(app, {
    get(target, property) {
      const value = Reflect.get(target, property) as unknown;
      if (typeof property !== 'string' || !GLOBAL_ENHANCER_SETTERS.has(property) || typeof value !== 'function') return value;
      return (...enhancers: unknown[]) => {
        transport.invokeDirectly(new Map());
        return (value as (...args: unknown[]) => unknown)(...enhancers);
      };
    },
  });
}

/** The app's methods that add enhancers for every handler. */
const GLOBAL_ENHANCER_SETTERS = new Set(['useGlobalGuards', 'useGlobalInterceptors', 'useGlobalPipes', 'useGlobalFilters']);

/**
 * The `@EventPattern` handlers of the app's controllers that can be called as their methods, by event type. An
 * event type with more than one handler is left to Nest, which calls them in turn; and none is when a module
 * provides an enhancer for every handler (`APP_GUARD`, `APP_INTERCEPTOR`, `APP_PIPE`, `APP_FILTER`).
 */
export function directEventHandlers(app: INestMicroservice): Map<string, DirectEventHandler> {
  const found = new Map<string, DirectEventHandler | null>();
  const scanner = new MetadataScanner();
  const modules = [...app.get(ModulesContainer).values()];
  const globalEnhancer = (token: unknown) => typeof token === 'string' && GLOBAL_ENHANCER_TOKENS.some((kind) => token === kind || token.startsWith(`${kind} `));
  if (modules.some((module) => [...module.providers.keys()].some(globalEnhancer))) return new Map();
  for (const module of modules) {
    for (const wrapper of module.controllers.values()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
      if (instance === undefined || instance === null || controller === null) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      const plain = wrapper.isDependencyTreeStatic() && !ENHANCERS.some((key) => hasItems(Reflect.getMetadata(key, controller)));
      for (const name of scanner.getAllMethodNames(prototype)) {
        const method = prototype[name];
        if (typeof method !== 'function') continue;
        const patterns = Reflect.getMetadata(PATTERN_METADATA, method) as unknown[] | undefined;
        if (patterns === undefined || Reflect.getMetadata(PATTERN_HANDLER_METADATA, method) !== EVENT_HANDLER) continue;
        const call = plain && !ENHANCERS.some((key) => hasItems(Reflect.getMetadata(key, method))) ? methodCall(instance, method as (...args: unknown[]) => unknown, Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name)) : undefined;
        for (const pattern of patterns) {
          if (typeof pattern !== 'string') continue;
          found.set(pattern, found.has(pattern) || call === undefined ? null : call);
        }
      }
    }
  }
  return new Map([...found].filter((entry): entry is [string, DirectEventHandler] => entry[1] !== null));
}

function hasItems(value: unknown): boolean {
  return Array.isArray(value) ? value.length > 0 : value !== undefined;
}

/**
 * The method called with what its parameters ask for: with no parameter decorators, Nest's `(payload, context)`;
 * else the whole payload where `@Payload()` stands and the context where `@Ctx()` does. Anything else (a payload's
 * property, a pipe) is Nest's to give: `undefined`.
 */
function methodCall(instance: object, method: (...args: unknown[]) => unknown, params: Record<string, { index: number; data?: unknown; pipes?: unknown[] }> | undefined): DirectEventHandler | undefined {
  const given = Object.entries(params ?? {});
  if (given.length === 0) return (event, context) => method.call(instance, event, context);
  const slots: Array<'payload' | 'context'> = [];
  for (const [key, param] of given) {
    const type = Number(key.split(':')[0]);
    if (param.data !== undefined || hasItems(param.pipes) || (type !== PAYLOAD && type !== CONTEXT)) return undefined;
    slots[param.index] = type === PAYLOAD ? 'payload' : 'context';
  }
  if (slots.some((slot) => slot === undefined) || slots.length !== given.length) return undefined;
  // The common shape, `(@Payload() event)`, without an array of arguments per event.
  if (slots.length === 1 && slots[0] === 'payload') return (event: RecordedEvent) => method.call(instance, event);
  return (event: RecordedEvent, context: EventStoreContext) => method.apply(instance, slots.map((slot) => (slot === 'payload' ? event : context)));
}
