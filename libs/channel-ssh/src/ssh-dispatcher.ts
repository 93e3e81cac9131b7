import { posix } from 'node:path';
import { CredentialRedaction } from './credential-redaction';
import { parseClaimRefusal, parseProbeOutput } from './marker-scripts';
import { renderMarkerProbe, renderSshCommand, sshTemplateOf } from './render-ssh-command';
import type { MarkerProbe, MarkerProbeRequest, SshAttempt, SshAttemptResult, SshCredential } from './ssh-attempt';
import { SshSession } from './ssh-session';
import type { ConnectFailure } from './ssh-session';
import type { ToolContract } from '@oncegate/contracts';

export interface SshDispatcherOptions {
  /** Pause between probes while a marker is absent and `marker.startedWaitMs` has not run out. Default 250 ms. */
  readonly probeIntervalMs?: number;
  /**
   * SSH keepalive interval; after 3 unanswered keepalives the connection counts as dropped. Default 15000 ms;
   * 0 disables them (a silently dead connection then ends at the response timeout).
   */
  readonly keepaliveIntervalMs?: number;
}

const DEFAULT_PROBE_INTERVAL_MS = 250;
const DEFAULT_KEEPALIVE_INTERVAL_MS = 15_000;
/** The probe prints a state word and two short lines. */
const PROBE_OUTPUT_BYTES = 4_096;

/**
 * Runs one SSH attempt and says honestly what is known afterwards (README.md): the command `exited` with a
 * status, it was `not_sent` (nothing ran), the host was `denied` (not the pinned key), or the outcome is
 * `unknown` because the exec request left and no exit status came back. `probeMarker` reads the durable marker
 * an attempt leaves on the host, for the gateway's recovery of an unknown outcome.
 *
 * One connection per call; nothing is pooled, so every attempt authenticates with its own credential.
 */
export class SshDispatcher {
  private readonly probeIntervalMs: number;
  private readonly keepaliveIntervalMs: number;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(options: SshDispatcherOptions = {}) {
    this.probeIntervalMs = options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
    this.keepaliveIntervalMs = options.keepaliveIntervalMs ?? DEFAULT_KEEPALIVE_INTERVAL_MS;
  }

  /** Never rejects. */
  run(attempt: SshAttempt): Promise<SshAttemptResult> {
    return this.track(this.runAttempt(attempt));
  }

  /**
   * Reads the marker of `executionId` on the tool's host: `completed` (with the exit status), `started`, or —
   * after looking again until `marker.startedWaitMs` has passed since the call — `absent`. Never rejects.
   */
  probeMarker(request: MarkerProbeRequest): Promise<MarkerProbe> {
    return this.track(this.probe(request));
  }

  /** Stops taking calls (they return `not_sent`) and waits for those in flight, which their timeouts bound. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
    return work;
  }

  private async runAttempt(attempt: SshAttempt): Promise<SshAttemptResult> {
    const redaction = new CredentialRedaction(attempt.credential);
    if (this.closed) return { kind: 'not_sent', reason: 'the SSH dispatcher is closed' };
    let command: string;
    try {
      command = renderSshCommand(attempt.tool, attempt.arguments, attempt.executionId, attempt.attempt).command;
    } catch (error) {
      return { kind: 'not_sent', reason: redaction.redact(`could not render the command: ${messageOf(error)}`) };
    }
    const session = await this.connect(attempt.tool, attempt.credential, redaction);
    if (!(session instanceof SshSession)) return session;
    try {
      const outcome = await session.exec(command, attempt.tool.limits);
      if (outcome.kind !== 'exited' || attempt.tool.marker === null) return outcome;
      const refusal = parseClaimRefusal(outcome.exitCode, Buffer.from(outcome.stderr).toString('utf8'));
      if (refusal === undefined) return outcome;
      const by = refusal.claimedBy === null ? 'another attempt' : `attempt ${refusal.claimedBy}`;
      return { kind: 'claimed', claimedBy: refusal.claimedBy, reason: `the host refused attempt ${attempt.attempt}: ${by} had already claimed execution ${attempt.executionId}; nothing of this attempt ran` };
    } finally {
      session.close();
    }
  }

  private async probe(request: MarkerProbeRequest): Promise<MarkerProbe> {
    const startedAt = Date.now();
    const redaction = new CredentialRedaction(request.credential);
    if (this.closed) return { kind: 'not_sent', reason: 'the SSH dispatcher is closed' };
    let command: string;
    try {
      command = renderMarkerProbe(request.tool, request.executionId);
    } catch (error) {
      return { kind: 'not_sent', reason: redaction.redact(`could not render the marker probe: ${messageOf(error)}`) };
    }
    const startedWaitMs = request.tool.marker?.startedWaitMs ?? 0;
    const session = await this.connect(request.tool, request.credential, redaction);
    if (!(session instanceof SshSession)) return session;
    try {
      for (;;) {
        const outcome = await session.exec(command, { responseTimeoutMs: request.tool.limits.responseTimeoutMs, responseBytes: PROBE_OUTPUT_BYTES });
        if (outcome.kind === 'not_sent') return outcome;
        if (outcome.kind === 'unknown') return { kind: 'unknown', reason: `the marker probe got no answer: ${outcome.reason}: ${outcome.detail}` };
        const parsed = outcome.exitCode === 0 ? parseProbeOutput(Buffer.from(outcome.stdout).toString('utf8')) : undefined;
        if (parsed === undefined) {
          const said = Buffer.from(outcome.stderr).toString('utf8').trim().slice(0, 200);
          return { kind: 'unknown', reason: redaction.redact(`the marker could not be read (probe exit status ${outcome.exitCode}${said === '' ? '' : `: ${said}`})`) };
        }
        if (parsed.state === 'completed') {
          const output = (stream: 'stdout' | 'stderr') => posix.join(request.tool.marker!.directory, `${request.executionId}.${parsed.attempt}.${stream}`);
          const keptOutput = (['stdout', 'stderr'] as const).filter((stream) => parsed.kept[stream]).map(output);
          return { kind: 'completed', exitStatus: parsed.exitStatus, attempt: parsed.attempt, keptOutput };
        }
        if (parsed.state === 'started') return { kind: 'started', attempt: parsed.attempt };
        const waitedMs = Date.now() - startedAt;
        if (waitedMs >= startedWaitMs || this.closed) return { kind: 'absent', waitedMs };
        await new Promise((resolve) => setTimeout(resolve, Math.min(this.probeIntervalMs, startedWaitMs - waitedMs)));
      }
    } finally {
      session.close();
    }
  }

  private async connect(tool: ToolContract, credential: SshCredential, redaction: CredentialRedaction): Promise<SshSession | ConnectFailure> {
    try {
      return await SshSession.open({
        target: sshTemplateOf(tool),
        credential,
        connectTimeoutMs: tool.limits.connectTimeoutMs,
        keepaliveIntervalMs: this.keepaliveIntervalMs,
        redaction,
      });
    } catch (error) {
      return { kind: 'not_sent', reason: redaction.redact(`could not connect: ${messageOf(error)}`) };
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
