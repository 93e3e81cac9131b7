import { context, INVALID_SPAN_CONTEXT, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

/** The tracer every span of Oncegate comes from (a no-op until `startTracing`). */
const tracer = () => trace.getTracer('oncegate');

/**
 * Whether this process exports spans (from `startTracing` until its `close`). Until then the API's tracer,
 * propagator and context manager are no-ops, and a span is one that records nothing: `inSpan` hands its work this
 * one instead of starting, activating and ending one of its own (a tool call and each attempt made one).
 */
let exporting = false;
const NOT_RECORDED: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export interface TracingConfig {
  /** OTLP/HTTP endpoint; spans go to `<endpoint>/v1/traces`. */
  readonly endpoint: string;
  /** Share of new traces recorded (a trace the caller started follows the caller's decision). */
  readonly sampleRatio: number;
}

/**
 * Starts exporting this process's spans over OTLP/HTTP: a W3C trace-context propagator (so a `traceparent` from an
 * MCP request or an event's metadata continues its trace), the async-local context of Node, and a batch processor.
 * The resource names the service (`service.name` `oncegate-<service>`) and this process's instance. The SDK's packages
 * are imported here, by the processes that export spans, not by every process that imports this library (each CLI
 * command, every service): loading them cost each of those tens of milliseconds of CPU.
 */
export async function startTracing(config: TracingConfig, service: string, instance: string): Promise<{ close(): Promise<void> }> {
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }, { OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider }] =
    await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace'),
    ]);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': `oncegate-${service}`, 'service.namespace': 'oncegate', 'service.instance.id': instance }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: `${config.endpoint.replace(/\/$/, '')}/v1/traces` }), scheduledDelayMillis: 500 })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  exporting = true;
  return {
    async close() {
      exporting = false;
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

export interface SpanOptions {
  readonly kind?: SpanKind;
  /** Ids, names and states only: never an argument value, a token or a credential. */
  readonly attributes?: Attributes;
  /** The span's parent (an event's or a request's trace context); default: the active span. */
  readonly parent?: Context;
}

/** Runs `work` in a span, ended when the work settles; a failure is recorded on the span (its message only) and thrown on. */
export function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  if (exporting) return inRecordedSpan(name, options, work);
  try {
    return work(NOT_RECORDED);
  } catch (error) {
    // As from the span's own `async` path: a failure is a rejected promise, never a throw.
    return Promise.reject(error);
  }
}

async function inRecordedSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) }, parent, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).name });
      throw error;
    } finally {
      span.end();
    }
  });
}

export { SpanKind };
