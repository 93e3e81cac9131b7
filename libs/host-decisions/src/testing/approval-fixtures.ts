/**
 * Test support for the approval specs: executions built with the domain's own commands through the command
 * loop, on a real store, so every fixture is a history the decider accepts.
 */
import { randomBytes } from 'node:crypto';
import { parseContractFile, type ToolContract } from '@oncegate/contracts';
import { executionIdFromUlid, type ApprovalScope, type ExecutionCommand, type ExecutionId, type IsoInstant } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { newUlid, runExecutionCommand, type Clock } from '@oncegate/execution-journal';

/** A contract file with the one tool the fixtures call, aimed at `targetUrl`. */
export function approvalToolsYaml(targetUrl: string): string {
  return `version: 1
tools:
  - name: send_payment
    description: Charge a card. Never repeated on its own.
    class: irreversible
    channel: http
    target: demo/payments
    input_schema:
      type: object
      properties:
        payment_reference: { type: string, minLength: 8, maxLength: 64 }
        amount_cents: { type: integer, minimum: 1 }
        card_token: { type: string, minLength: 8 }
      required: [payment_reference, amount_cents, card_token]
      additionalProperties: false
    http:
      method: POST
      url: ${targetUrl}/payments
      body:
        reference: "{{args.payment_reference}}"
        amount_cents: "{{args.amount_cents}}"
        card_token: "{{args.card_token}}"
      idempotency_header: Idempotency-Key
    secret_arguments: [card_token]
    approval: per_use
    correlation_window: 1h
`;
}

/** The tools of `approvalToolsYaml`, parsed by the real contract parser. */
export function approvalTools(targetUrl: string): Map<string, ToolContract> {
  const contract = parseContractFile(approvalToolsYaml(targetUrl), 'approval-tools.yaml');
  return new Map(contract.tools.map((tool) => [tool.name, tool]));
}

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  private ms: number;
  constructor(start: IsoInstant = '2026-07-22T10:00:00.000Z') {
    this.ms = Date.parse(start);
  }
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The argument-key HMAC a secret argument is recorded as; never the value. */
export const CARD_TOKEN_HMAC = `hmac-sha256:a1:${'7c'.repeat(32)}`;

export interface PaymentAwaitingApproval {
  readonly actor?: string;
  readonly runId?: string | null;
  readonly scope?: ApprovalScope;
  /** Milliseconds after the request; absent for never. */
  readonly expiresInMs?: number;
  readonly reference?: string;
}

/** Runs one command on an execution, as `service` (the command loop a service would run). */
export async function command(
  store: EventStore,
  clock: Clock,
  executionId: ExecutionId,
  build: (now: IsoInstant) => ExecutionCommand,
  actor = 'service:authorization',
): Promise<void> {
  await runExecutionCommand(store, executionId, () => build(clock.now().toISOString()), { actor }, clock);
}

/** A `send_payment` call accepted, nothing decided yet; returns its execution id. */
export async function acceptedPayment(store: EventStore, clock: Clock, options: PaymentAwaitingApproval = {}): Promise<ExecutionId> {
  const executionId = executionIdFromUlid(newUlid());
  const actor = options.actor ?? 'agent:billing-bot';
  const runId = options.runId === undefined ? 'run-7f3a' : options.runId;
  const intentScope = runId === null ? ({ kind: 'actor' } as const) : ({ kind: 'run', runId } as const);
  await command(
    store,
    clock,
    executionId,
    (now) => ({
      type: 'AcceptExecution',
      executionId,
      now,
      record: {
        actor,
        tool: 'send_payment',
        channel: 'http',
        target: 'demo/payments',
        credential_ref: '',
        method: 'POST',
        arguments: { payment_reference: options.reference ?? 'pay-000123', amount_cents: 125_000, card_token: CARD_TOKEN_HMAC },
        intent_scope: runId === null ? 'actor' : `run:${runId}`,
      },
      fingerprint: `hmac-sha256:k1:${randomBytes(32).toString('hex')}`,
      operationClass: 'irreversible',
      intentScope,
      correlationWindowMs: 3_600_000,
      redeliveryGraceMs: 60_000,
      attemptPolicy: { maxAttempts: 1, attemptTimeoutMs: 1_500, markerBeforeWork: false },
      correlation: { jsonRpcId: 1, sessionId: 'session-1', transport: 'streamable-http' },
      argumentsRef: null,
      runId,
    }),
    actor,
  );
  return executionId;
}

/** A `send_payment` call accepted and held for approval by policy; returns its execution id. */
export async function paymentAwaitingApproval(store: EventStore, clock: Clock, options: PaymentAwaitingApproval = {}): Promise<ExecutionId> {
  const executionId = await acceptedPayment(store, clock, options);
  await command(store, clock, executionId, (now) => ({
    type: 'RequestApproval',
    executionId,
    now,
    requestedBy: 'policy:payments-over-limit',
    reason: 'payments over 1000.00 need a person',
    scope: options.scope ?? 'execution',
    expiresAt: options.expiresInMs === undefined ? null : new Date(Date.parse(now) + options.expiresInMs).toISOString(),
  }));
  return executionId;
}

/** The same call made again: attached to the execution, never a second request. */
export async function retryAttached(store: EventStore, clock: Clock, executionId: ExecutionId, jsonRpcId: number): Promise<void> {
  await command(
    store,
    clock,
    executionId,
    (now) => ({ type: 'AttachRetry', executionId, now, correlation: { jsonRpcId, sessionId: `session-${jsonRpcId}`, transport: 'streamable-http' } }),
    'agent:billing-bot',
  );
}

/** What the authorization service does when nobody answered in time. */
export async function deniedOnTimeout(store: EventStore, clock: Clock, executionId: ExecutionId): Promise<void> {
  await command(store, clock, executionId, (now) => ({
    type: 'DenyExecution',
    executionId,
    now,
    basis: 'approval_timeout',
    reason: 'nobody decided before the request expired',
  }));
}
