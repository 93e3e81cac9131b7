import { randomUUID } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import type { Consumer, Kafka } from 'kafkajs';
import type { ToolContract } from '@oncegate/contracts';
import { executionStream, isExecutionId, type ExecutionId, type ReviewResolution } from '@oncegate/domain';
import { backoffMs, type EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import type { KafkaDecisionsConfig } from '@oncegate/host-config';
import { decide, isApprovalRefusal, isReviewRefusal, resolveReview, type ApprovalDecision } from '@oncegate/host-decisions';
import type { ApproverDirectory } from '@oncegate/host-principals';
import type { BusProducer } from './bus-client';
import type { BusMessage } from './cloud-events';
import { decisionValidator, signatureBytes, verifyingKey } from './decision-signature';

/** A decision as it arrives on `kafka.decisions.topic` (docs/events/bus-decision.schema.json). */
export type BusDecision =
  | {
      readonly kind: 'approval';
      readonly id?: string;
      readonly execution_id: string;
      readonly decision: ApprovalDecision;
      readonly by: string;
      readonly reason: string;
      /** Base64 Ed25519 signature by a key of `by` over the canonical JSON of the rest (decision-signature.ts). */
      readonly signature?: string;
    }
  | {
      readonly kind: 'review';
      readonly id?: string;
      readonly execution_id: string;
      readonly resolution: ReviewResolution;
      readonly by: string;
      readonly reason: string;
      /** With not_executed: send it again now (an irreversible call: once a second approver says the same). */
      readonly resend?: boolean;
      readonly signature?: string;
    };

export type DecisionRefusal =
  | 'malformed'
  | 'unknown_approver'
  | 'bad_signature'
  | 'not_found'
  | 'not_pending'
  | 'not_held'
  | 'invalid_decision'
  | 'invalid_resolution';

/** What the relay answers on `kafka.decisions.replies` for each decision it took from the bus. */
export interface DecisionReply {
  /** The decision's `id`, or `<topic>/<partition>/<offset>` when it had none (or could not be read). */
  readonly in_reply_to: string;
  readonly kind: 'approval' | 'review' | null;
  readonly execution_id: string | null;
  readonly outcome: 'applied' | 'refused';
  readonly refusal: DecisionRefusal | null;
  /** Said plainly: what was recorded, or why nothing was. */
  readonly message: string;
  /** The execution's state after the decision, when there is one. */
  readonly state: string | null;
}

const CONTEXT = 'relay-decisions';
/** How often the consumer looks for a decisions topic that does not exist yet. */
const TOPIC_POLL_MS = 2_000;
/** Longest a stop waits for the consumer's loop to end. */
const STOP_BOUND_MS = 5_000;
/** Longest pause between two tries while the consumer keeps failing. */
const MAX_PAUSE_MS = 10_000;

/** Largest decision message read; a larger one is refused unread. */
const MAX_DECISION_BYTES = 64 * 1024;

export interface BusDecisionsOptions {
  readonly kafka: Kafka;
  readonly producer: BusProducer;
  readonly config: KafkaDecisionsConfig;
  readonly source: string;
  readonly store: EventStore;
  readonly approvers: ApproverDirectory;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly clock: Clock;
  readonly logger: LoggerService;
}

/**
 * Approval decisions and review resolutions taken from the bus, applied through the same queues as the CLI, the
 * approvals API and the console: each is decided on one read of the execution's stream and appended with its
 * expected revision, so a late or repeated decision is refused, never recorded twice. The decider named in `by` must
 * be an approver of this journal with a token that is not revoked; a decision's `signature`, when it carries one (or
 * must, with `require_signature`), must verify with one of their keys that is not revoked. Every decision gets one
 * reply: applied, or refused and why. A decision the relay took but did not answer (it crashed) is taken again from
 * the last committed offset; if it was recorded the first time, the second answer says it was refused as already
 * decided.
 */
export class BusDecisions {
  private consumer: Consumer | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  /** Cuts a pause short when the consumer stops. */
  private wake: (() => void) | undefined;
  /** `undefined` while the consumer is a member of its group and takes decisions; else why not. */
  private notConsuming: string | undefined = 'starting';
  private restarts = 0;

  constructor(private readonly options: BusDecisionsOptions) {}

  /**
   * Starts taking decisions in the background, and keeps at it: while the decisions topic does not exist yet it waits
   * for it, and when the broker is away, the group cannot be joined or the consumer crashed for good, it starts a new
   * consumer after a growing pause (up to 10 s). Every decision is answered once the topic exists.
   */
  start(): void {
    this.running ??= this.keepConsuming();
  }

  /** Whether decisions are being taken: `undefined` when they are, else why not (for `/readyz`). */
  state(): { readonly notConsuming: string | undefined; readonly restarts: number } {
    return { notConsuming: this.notConsuming, restarts: this.restarts };
  }

  private async keepConsuming(): Promise<void> {
    const { logger } = this.options;
    let failures = 0;
    while (!this.stopped) {
      try {
        await this.waitForTopic();
        if (this.stopped) break;
        const crashed = await this.consume(() => (failures = 0));
        if (this.stopped) break;
        throw crashed;
      } catch (error) {
        if (this.stopped) break;
        failures += 1;
        this.restarts += 1;
        const pause = backoffMs(failures, 500, MAX_PAUSE_MS);
        this.notConsuming = `the consumer failed (${failures} in a row; next try in ${(pause / 1000).toFixed(1)} s): ${(error as Error).message}`;
        if ((failures & (failures - 1)) === 0) logger.error(`decisions: ${this.notConsuming}`, CONTEXT);
        await this.consumer?.disconnect().catch(() => undefined);
        this.consumer = undefined;
        await this.pause(pause);
      }
    }
  }

  /** Returns once the decisions topic exists (a consumer subscribed to a topic that does not exist yet never recovers). */
  private async waitForTopic(): Promise<void> {
    const { kafka, config, logger } = this.options;
    const admin = kafka.admin();
    await admin.connect();
    try {
      let said = false;
      while (!this.stopped && !(await admin.listTopics()).includes(config.topic)) {
        this.notConsuming = `waiting for the topic ${config.topic} to exist`;
        if (!said) logger.warn(`decisions: ${this.notConsuming}; decisions published to it then are taken from its beginning`, CONTEXT);
        said = true;
        await this.pause(TOPIC_POLL_MS);
      }
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  /** Runs one consumer; resolves with the error it crashed with for good, or when the consumer stops. */
  private async consume(joined: () => void): Promise<Error> {
    const { kafka, config, logger } = this.options;
    // A relay killed without a word leaves the group within 10 s, so its partitions of the decisions topic move on soon.
    // A fetch that finds no decision waits at most a second for one (kafkajs's default is 5 s): a decision that comes
    // meanwhile ends the wait at once either way, and a stop, which waits for the fetch in flight, takes no longer.
    const consumer = kafka.consumer({ groupId: config.group, allowAutoTopicCreation: false, sessionTimeout: 10_000, rebalanceTimeout: 20_000, maxWaitTimeInMs: 1_000 });
    this.consumer = consumer;
    const crashed = new Promise<Error>((resolve) => {
      consumer.on(consumer.events.CRASH, (event) => {
        const { error, restart } = event.payload as { error: Error; restart: boolean };
        // With `restart` the client starts the consumer again itself.
        if (!restart) resolve(error);
        else this.notConsuming = `restarting after: ${error.message}`;
      });
      consumer.on(consumer.events.STOP, () => resolve(new Error('the consumer stopped')));
    });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      if (this.notConsuming !== undefined) logger.log(`decisions: taking decisions from ${config.topic} (group ${config.group})`, CONTEXT);
      this.notConsuming = undefined;
      joined();
    });
    consumer.on(consumer.events.REBALANCING, () => (this.notConsuming = `rejoining the group ${config.group}`));
    this.notConsuming = `joining the group ${config.group}`;
    await consumer.connect();
    await consumer.subscribe({ topics: [config.topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        const reply = await this.apply(message.value, `${topic}/${partition}/${message.offset}`);
        await this.options.producer.send([{ topic: config.replies, message: this.replyMessage(reply) }]);
        const about = reply.execution_id ?? reply.in_reply_to;
        logger.log(`decision ${reply.in_reply_to} on ${about}: ${reply.outcome}${reply.refusal ? ` (${reply.refusal})` : ''}`, CONTEXT);
      },
    });
    return crashed;
  }

  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }

  /** Applies one decision message; never throws for anything the message says. */
  async apply(value: Buffer | null, where: string): Promise<DecisionReply> {
    const refused = (refusal: DecisionRefusal, message: string, decision?: BusDecision, state: string | null = null): DecisionReply => ({
      in_reply_to: decision?.id ?? where,
      kind: decision?.kind ?? null,
      execution_id: decision?.execution_id ?? null,
      outcome: 'refused',
      refusal,
      message,
      state,
    });
    if (value === null || value.length === 0) return refused('malformed', 'an empty message is not a decision');
    if (value.length > MAX_DECISION_BYTES) return refused('malformed', `a decision is at most ${MAX_DECISION_BYTES} bytes (got ${value.length})`);
    let body: unknown;
    try {
      body = JSON.parse(value.toString('utf8'));
    } catch (error) {
      return refused('malformed', `not JSON: ${(error as Error).message}`);
    }
    const validate = decisionValidator();
    if (!validate(body)) {
      const [first] = validate.errors ?? [];
      return refused('malformed', `not a decision (docs/events/bus-decision.schema.json): ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}`);
    }
    const decision = body;
    if (!isExecutionId(decision.execution_id)) return refused('malformed', `execution_id '${decision.execution_id.slice(0, 64)}' is not an execution id (ex_ followed by a ULID)`, decision);
    const executionId: ExecutionId = decision.execution_id;
    if (!(await this.isApprover(decision.by))) {
      return refused('unknown_approver', `${decision.by.slice(0, 80)} is not an approver of this journal (or every token of theirs is revoked): oncegate approvers add <name>`, decision);
    }
    const signed = await this.checkSignature(body as Readonly<Record<string, unknown>>, decision);
    if (typeof signed === 'object') return refused(signed.refusal, signed.message, decision);
    const signedWith = signed === undefined ? '' : ` (signed with key ${signed.slice(0, 16)})`;
    const { store, clock, tools } = this.options;
    try {
      if (decision.kind === 'approval') {
        const view = await decide(store, clock, executionId, decision.decision, decision.by, decision.reason, tools);
        return { in_reply_to: decision.id ?? where, kind: 'approval', execution_id: executionId, outcome: 'applied', refusal: null, message: `approval ${view.summary}${signedWith}`, state: view.state };
      }
      const view = await resolveReview(store, clock, executionId, decision.resolution, decision.by, decision.reason, { resend: decision.resend === true });
      return { in_reply_to: decision.id ?? where, kind: 'review', execution_id: executionId, outcome: 'applied', refusal: null, message: `review resolved as ${decision.resolution} by ${decision.by}${signedWith}`, state: view.state };
    } catch (error) {
      if (isApprovalRefusal(error) || isReviewRefusal(error)) {
        const state = 'status' in error && typeof error.status === 'string' ? error.status : null;
        return refused(error.kind, error.message, decision, state === 'initial' ? null : state);
      }
      throw error;
    }
  }

  /**
   * The id of the key that signed `body` (the decision as it was read, `signature` included), `undefined` for an
   * unsigned decision the configuration lets through, or why it is refused. A signature present is checked even when
   * none is required: one that does not verify means the message was changed or signed by someone else.
   */
  private async checkSignature(body: Readonly<Record<string, unknown>>, decision: BusDecision): Promise<string | undefined | { refusal: 'malformed' | 'bad_signature'; message: string }> {
    const how = `sign the RFC 8785 canonical JSON of the decision without signature with an Ed25519 key of ${decision.by} (docs/bus.md)`;
    if (decision.signature === undefined) {
      return this.options.config.requireSignature === true
        ? { refusal: 'bad_signature', message: `the decision carries no signature and kafka.decisions.require_signature is on: ${how}` }
        : undefined;
    }
    const signature = signatureBytes(decision.signature);
    if (signature === undefined) return { refusal: 'bad_signature', message: 'signature is not an Ed25519 signature: 64 bytes in base64 (88 characters)' };
    const keys = await this.options.approvers.signingKeys(decision.by);
    if (keys.length === 0) {
      return { refusal: 'bad_signature', message: `${decision.by} has no signing key that is not revoked: oncegate approvers key add ${decision.by.slice('approver:'.length)} --public-key <file>` };
    }
    let keyId: string | undefined;
    try {
      keyId = verifyingKey(body, signature, keys);
    } catch (error) {
      // JSON.parse lets a lone surrogate through (`"\ud800"`), which has no canonical form and so no signed bytes.
      return { refusal: 'malformed', message: `the decision has no canonical JSON to check a signature over: ${(error as Error).message}` };
    }
    if (keyId === undefined) {
      return {
        refusal: 'bad_signature',
        message: `the signature does not verify with ${keys.length === 1 ? 'the live key' : `any of the ${keys.length} live keys`} of ${decision.by}: the decision was changed after it was signed, or signed with another key; ${how}`,
      };
    }
    return keyId;
  }

  private async isApprover(by: string): Promise<boolean> {
    const records = await this.options.approvers.list();
    return records.some((record) => record.actor === by && record.revokedAt === null);
  }

  private replyMessage(reply: DecisionReply): BusMessage {
    return {
      key: reply.execution_id ?? reply.in_reply_to,
      value: JSON.stringify(reply),
      headers: {
        ce_specversion: '1.0',
        ce_id: randomUUID(),
        ce_source: this.options.source,
        ce_type: reply.outcome === 'applied' ? 'DecisionApplied' : 'DecisionRefused',
        ...(reply.execution_id === null ? {} : { ce_subject: executionStream(reply.execution_id as ExecutionId) }),
        ce_time: this.options.clock.now().toISOString(),
        'content-type': 'application/json',
      },
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.consumer?.disconnect().catch(() => undefined);
    // A client still waiting on a broker that is away is let go after a while: a stop does not wait for its retries.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise((resolve) => (timer = setTimeout(resolve, STOP_BOUND_MS)))]);
    clearTimeout(timer);
    this.consumer = undefined;
    this.notConsuming = 'stopped';
  }
}
