import { context, propagation, ROOT_CONTEXT, type Context } from '@opentelemetry/api';

/**
 * The W3C `traceparent` of the span active here, to be carried by the events this code appends (their metadata) and
 * by a request it sends; `undefined` when no span is active or tracing is off (no propagator registered).
 */
export function activeTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier['traceparent'];
}

/**
 * The trace context a `traceparent` names (an event's metadata, an MCP request's `_meta`), to start a span in as a
 * child of it; without one (or a malformed one), the root context: a new trace.
 */
export function traceContextFrom(traceparent: unknown): Context {
  if (typeof traceparent !== 'string' || traceparent.length > 256) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}
