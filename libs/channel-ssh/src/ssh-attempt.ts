import type { ToolContract } from '@oncegate/contracts';

/**
 * The key the gateway logs in with for one attempt. It goes to ssh2 only, at connect time, and never appears in
 * a result, an error or a log line.
 */
export interface SshCredential {
  /** Private key, OpenSSH (`-----BEGIN OPENSSH PRIVATE KEY-----`) or PEM. */
  readonly privateKey: string;
  /** For an encrypted key. */
  readonly passphrase?: string;
}

/** One SSH attempt of one execution. */
export interface SshAttempt {
  /** The execution id; it names the marker files, so every attempt of an execution shares them. */
  readonly executionId: string;
  /** 1 for the first dispatch; recorded inside the marker files. */
  readonly attempt: number;
  /** A tool on channel `ssh`. */
  readonly tool: ToolContract;
  /** Validated arguments as the agent sent them; input-schema defaults are filled in by the dispatcher. */
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly credential: SshCredential;
}

/** The command ran and its exit status came back: `succeeded` for 0, `failed` for anything else. */
export interface SshExitedResult {
  readonly kind: 'exited';
  readonly outcome: 'succeeded' | 'failed';
  readonly exitCode: number;
  /** The first `limits.responseBytes` bytes of stdout. */
  readonly stdout: Uint8Array;
  /** The first `limits.responseBytes` bytes of stderr. */
  readonly stderr: Uint8Array;
  /** True when stdout or stderr was cut at the cap. */
  readonly truncated: boolean;
}

/** Definite: nothing ran. No exec request was sent (or the host refused it), so sending it again is safe. */
export interface SshNotSentResult {
  readonly kind: 'not_sent';
  readonly reason: string;
}

/** Definite: the host's key is not the pinned one. Nothing was sent past the key exchange; nothing ran. */
export interface SshDeniedResult {
  readonly kind: 'denied';
  /** Says which key was seen (`SHA256:…`) and which is pinned. */
  readonly reason: string;
}

/** The exec request was sent and no exit status came back: the command may be running or may have run. */
export interface SshUnknownResult {
  readonly kind: 'unknown';
  /**
   * `ssh_connection_dropped`: the connection (or the session) ended without an exit status.
   * `timeout_after_send`: `limits.responseTimeoutMs` ran out; the channel was closed, the command left running.
   */
  readonly reason: 'ssh_connection_dropped' | 'timeout_after_send';
  readonly detail: string;
}

/**
 * Definite for this attempt, not for the execution: the host refused to start it because another attempt of the
 * same execution had already claimed the execution (the marker wrapper's claim). Nothing of this attempt ran; the
 * other attempt's markers tell what happened, so the execution's outcome is read from them.
 */
export interface SshClaimedResult {
  readonly kind: 'claimed';
  /** The attempt that holds the claim, from its `.started` marker; `null` when it has not written one yet. */
  readonly claimedBy: number | null;
  readonly reason: string;
}

export type SshAttemptResult = SshExitedResult | SshNotSentResult | SshDeniedResult | SshUnknownResult | SshClaimedResult;

/** What `probeMarker` needs: the execution's marker lives on the tool's host, in the tool's marker directory. */
export interface MarkerProbeRequest {
  readonly executionId: string;
  /** A tool on channel `ssh` with a `marker` (every `remote_command`). */
  readonly tool: ToolContract;
  readonly credential: SshCredential;
}

/** `<id>.done` exists: an attempt finished with `exitStatus`. */
export interface MarkerCompleted {
  readonly kind: 'completed';
  readonly exitStatus: number;
  /** The attempt that wrote it; `null` if the file does not say. */
  readonly attempt: number | null;
  /**
   * Paths on the host of that attempt's output files that are still there (`<dir>/<id>.<n>.stdout`, `.stderr`):
   * the output that did not come back over the lost connection. Empty when none is kept.
   */
  readonly keptOutput: readonly string[];
}

/** Only `<id>.started` exists: an attempt began (it may still be running, or have died without finishing). */
export interface MarkerStarted {
  readonly kind: 'started';
  readonly attempt: number | null;
}

/**
 * Neither file exists after waiting `marker.startedWaitMs`. Whether that proves nothing ran is the contract's
 * `marker.writtenBeforeWork`, for the gateway to weigh.
 */
export interface MarkerAbsent {
  readonly kind: 'absent';
  /** How long the probe kept looking. */
  readonly waitedMs: number;
}

/**
 * The probe learned nothing: `not_sent` (could not connect, authenticate or render), `denied` (host key
 * mismatch), `unknown` (the probe ran but gave no readable answer: dropped, timed out, unreadable directory).
 */
export interface MarkerProbeFailed {
  readonly kind: 'not_sent' | 'denied' | 'unknown';
  readonly reason: string;
}

export type MarkerProbe = MarkerCompleted | MarkerStarted | MarkerAbsent | MarkerProbeFailed;
