import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The metrics of this process, one set per process whatever services it runs (`oncegate start` runs them all in one),
 * exposed at `/metrics` of the operations listener. Every label takes values from a bounded set — tool names from the
 * contract file, channels, event types, states and reasons from the domain's enums — never an execution id, an
 * argument, a token or a credential.
 */
export class ProcessMetrics {
  readonly registry = new Registry();

  /** Every `tools/call` of a side-effecting or read-only tool answered by this gateway. */
  readonly toolCalls = new Counter({
    name: 'oncegate_tool_calls_total',
    help: 'Tool calls answered, by tool, operation class, how the call was matched (new execution, retry attached, stored result replayed) and the state it was answered with (or error).',
    labelNames: ['tool', 'class', 'match', 'state'] as const,
    registers: [this.registry],
  });

  readonly dispatchSeconds = new Histogram({
    name: 'oncegate_dispatch_seconds',
    help: 'Time from sending an attempt to knowing what it came to, by channel and outcome (succeeded, failed, not_sent, unknown).',
    labelNames: ['channel', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly unknownOutcomes = new Counter({
    name: 'oncegate_unknown_outcomes_total',
    help: 'Attempts whose outcome is unknown, by channel and reason.',
    labelNames: ['channel', 'reason'] as const,
    registers: [this.registry],
  });

  readonly storeAppendSeconds = new Histogram({
    name: 'oncegate_store_append_seconds',
    help: "Time from asking the store to append to the append's commit being durable.",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  readonly storeAppendEvents = new Histogram({
    name: 'oncegate_store_append_events',
    help: 'Events in one append (one commit of one or several streams).',
    buckets: [1, 2, 3, 4, 5, 8, 16, 64],
    registers: [this.registry],
  });

  readonly executionEvents = new Counter({
    name: 'oncegate_execution_events_total',
    help: "Execution events this process appended, by type: the executions' transitions (ExecutionAccepted, ExecutionAuthorized, Dispatched, OutcomeObserved, OutcomeUnknown, ReviewRequired…).",
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly approvalDecisionSeconds = new Histogram({
    name: 'oncegate_approval_decision_seconds',
    help: 'Time from an approval request to its decision, by decision (granted, denied).',
    labelNames: ['decision'] as const,
    buckets: [1, 5, 15, 30, 60, 300, 900, 1800, 3600],
    registers: [this.registry],
  });

  readonly eventsHandled = new Counter({
    name: 'oncegate_consumer_events_total',
    help: "Events a service's consumer took, by consumer and result (handled, or parked after its handler kept failing).",
    labelNames: ['consumer', 'result'] as const,
    registers: [this.registry],
  });

  /** Reads of the OAuth issuer's key set (`oauth`): a rotation shows as an `unknown_key` read, an outage as `failed`. */
  readonly oauthKeySetReads = new Counter({
    name: 'oncegate_oauth_key_set_reads_total',
    help: "Reads of the OAuth issuer's key set, by why (first, expired, unknown_key) and result (read, failed).",
    labelNames: ['reason', 'result'] as const,
    registers: [this.registry],
  });

  /** Access tokens naming a key the key set held did not have: a rotation (`found`) or forged tokens (`refused`). */
  readonly oauthUnknownKeyTokens = new Counter({
    name: 'oncegate_oauth_unknown_key_tokens_total',
    help: "Access tokens signed with a key the issuer's key set did not hold when they came, by what came of it: found after reading the set again, refused (the set read since does not hold it either), unavailable (the set could not be read).",
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  /** Requests refused for their token (tokenRefusals() counts them and logs them, never the token). */
  readonly tokenRefusals = new Counter({
    name: 'oncegate_token_refusals_total',
    help: 'Requests refused for their token, by surface (mcp, approvals, console) and reason (missing, malformed, wrong_kind, unknown, revoked, access_token).',
    labelNames: ['surface', 'reason'] as const,
    registers: [this.registry],
  });

  private processCollected = false;

  /** Adds the runtime's own metrics (CPU, memory, event loop delay, handles), once; only a process that exposes them pays for them. */
  collectProcessMetrics(): void {
    if (this.processCollected) return;
    this.processCollected = true;
    collectDefaultMetrics({ register: this.registry, prefix: 'oncegate_process_' });
  }

  /** A gauge whose value is read when scraped; `read` returning `undefined` leaves it out of that scrape. */
  gauge(name: string, help: string, read: () => Promise<number | undefined>): void {
    // A service started again in this process reads its own state from then on.
    this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        const value = await read();
        if (value !== undefined) this.set(value);
      },
    });
  }

  /** Like `gauge`, with one value per label set; set again on every scrape. */
  labelledGauge<L extends string>(name: string, help: string, labelNames: readonly L[], read: () => Promise<ReadonlyArray<{ labels: Record<L, string>; value: number }>>): void {
    this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { labels, value } of await read()) this.set(labels, value);
      },
    });
  }
}

let metrics: ProcessMetrics | undefined;

/** This process's metrics. */
export function processMetrics(): ProcessMetrics {
  metrics ??= new ProcessMetrics();
  return metrics;
}
