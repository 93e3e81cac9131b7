// What every process exposes to its operators: the log, the metrics and the operations listener, traces, and the
// message that names who holds a port already taken.
export { createLogger } from './logger';
export { meteredStore } from './metered-store';
export { OperationsServer } from './operations-server';
export { listenFor, PortTakenError } from './port-taken';
export { processMetrics, ProcessMetrics } from './process-metrics';
export { tokenRefusals, TokenRefusals, type RefusalSurface } from './token-refusals';
export { inSpan, SpanKind, startTracing } from './tracing';
