import { createRequire } from 'node:module';
import type { Client, ClientChannel, ClientError } from 'ssh2';
import type { SshCommandTemplate } from '@oncegate/contracts';
import type { CredentialRedaction } from './credential-redaction';
import { blobKeyType, hostKeyAlgorithms, parsePinnedHostKey, sshFingerprint } from './host-key';
import type { SshCredential, SshDeniedResult, SshExitedResult, SshNotSentResult, SshUnknownResult } from './ssh-attempt';

const require = createRequire(import.meta.url);

/**
 * ssh2, loaded when the first session opens instead of when this library is imported: every oncegate process imports
 * it (each CLI command, the gateway), few of them run a remote command, and loading the package cost each of them
 * tens of milliseconds of CPU.
 */
function ssh2(): typeof import('ssh2') {
  return require('ssh2') as typeof import('ssh2');
}

export type ConnectFailure = SshNotSentResult | SshDeniedResult;
export type ExecOutcome = SshExitedResult | SshNotSentResult | SshUnknownResult;

export interface OpenSessionOptions {
  readonly target: SshCommandTemplate;
  readonly credential: SshCredential;
  /** Bounds the TCP connect, the key exchange and authentication together. */
  readonly connectTimeoutMs: number;
  /** 0 disables keepalives. */
  readonly keepaliveIntervalMs: number;
  readonly redaction: CredentialRedaction;
}

export interface ExecLimits {
  readonly responseTimeoutMs: number;
  readonly responseBytes: number;
}

/**
 * ssh2 writes these debug lines immediately before it hands the packet to the socket, in the same synchronous
 * step (Protocol.js `exec()`: `this._debug(…)` then `sendPacket(…)`), like undici's `onRequestStart` for the
 * HTTP dispatcher. They draw the line between "nothing ran" and "unknown". Anchored at the start, so a server's
 * debug message (logged as `Debug output from server: …`) cannot fake them.
 */
const SESSION_OPEN_SENT = /^Outbound: Sending CHANNEL_OPEN \(r:\d+, session\)/;
const EXEC_SENT = /^Outbound: Sending CHANNEL_REQUEST \(r:\d+, exec: /;
const KEEPALIVE_COUNT_MAX = 3;

/** One authenticated SSH connection to a pinned host, running one exec request at a time. */
export class SshSession {
  /** Why the connection ended, once it has. */
  private lost: string | undefined;
  private readonly lostListeners = new Set<() => void>();
  private sessionOpenSent = false;
  private onExecSent: (() => void) | undefined;

  private constructor(
    private readonly client: Client,
    private readonly where: string,
    private readonly redaction: CredentialRedaction,
  ) {}

  /**
   * Connects, checks the host key against the pin and authenticates with the credential's key, within
   * `connectTimeoutMs`. Never rejects: a failure is `not_sent`, or `denied` for a host key that is not the pinned
   * one. Either way no channel was opened.
   */
  static open(options: OpenSessionOptions): Promise<SshSession | ConnectFailure> {
    const { target, credential, redaction } = options;
    const where = `${target.host}:${target.port}`;
    const client = new (ssh2().Client)();
    const session = new SshSession(client, where, redaction);
    const pinned = parsePinnedHostKey(target.hostKey);
    let mismatch: string | undefined;

    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: SshSession | ConnectFailure) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (result !== session) client.destroy();
        resolve(result);
      };
      const notSent = (reason: string): SshNotSentResult => ({ kind: 'not_sent', reason: redaction.redact(reason) });
      const timer = setTimeout(
        () => finish(notSent(`connect timeout: no authenticated SSH session with ${where} within ${options.connectTimeoutMs} ms`)),
        options.connectTimeoutMs,
      );

      client.on('ready', () => finish(session));
      client.on('error', (error: ClientError) => {
        if (mismatch !== undefined) finish({ kind: 'denied', reason: mismatch });
        else finish(session.connectFailure(error, target, pinned.type));
        session.markLost(`connection error: ${error.message}`);
      });
      client.on('close', () => {
        if (mismatch !== undefined) finish({ kind: 'denied', reason: mismatch });
        else finish(notSent(`the connection to ${where} closed before authentication completed`));
        session.markLost('the connection closed');
      });

      try {
        client.connect({
          host: target.host,
          port: target.port,
          username: target.user,
          privateKey: credential.privateKey,
          ...(credential.passphrase === undefined ? {} : { passphrase: credential.passphrase }),
          authHandler: ['publickey'],
          algorithms: { serverHostKey: hostKeyAlgorithms(pinned.type) },
          hostVerifier: (key: Buffer) => {
            if (key.equals(pinned.blob)) return true;
            mismatch =
              `host key mismatch: ${where} presented ${blobKeyType(key)} key ${sshFingerprint(key)}, ` +
              `but the contract pins ${pinned.type} ${pinned.fingerprint}`;
            return false;
          },
          readyTimeout: options.connectTimeoutMs,
          keepaliveInterval: options.keepaliveIntervalMs,
          keepaliveCountMax: KEEPALIVE_COUNT_MAX,
          debug: (line: string) => session.observe(line),
        });
      } catch (error) {
        // ssh2 parses the key inside connect() and throws before any socket is opened.
        finish(notSent(`the credential's private key cannot be used: ${messageOf(error)}`));
      }
    });
  }

  /**
   * Sends one exec request and waits for its exit status, keeping the first `responseBytes` of stdout and of
   * stderr (reading on beyond them, so the exit status still arrives). Never rejects.
   *
   * - Failures before the exec request left → `not_sent`; the host refusing the request → `not_sent` too.
   * - After it left, no exit status → `unknown`: `timeout_after_send` once `responseTimeoutMs` has run out (the
   *   channel is closed, the command is not signalled), `ssh_connection_dropped` when the connection or the
   *   session ends first.
   */
  exec(command: string, limits: ExecLimits): Promise<ExecOutcome> {
    return new Promise((resolve) => {
      const stdout = new CappedBytes(limits.responseBytes);
      const stderr = new CappedBytes(limits.responseBytes);
      let sent = false;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      let channel: ClientChannel | undefined;
      let exitCode: number | undefined;
      let exitSignal: string | undefined;

      const settle = (outcome: ExecOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.lostListeners.delete(onLost);
        if (this.onExecSent === onSent) this.onExecSent = undefined;
        resolve(outcome);
      };
      const notSent = (reason: string) => settle({ kind: 'not_sent', reason: this.redaction.redact(reason) });
      const dropped = (detail: string) => settle({ kind: 'unknown', reason: 'ssh_connection_dropped', detail: this.redaction.redact(detail) });
      const exited = (code: number) =>
        settle({
          kind: 'exited',
          outcome: code === 0 ? 'succeeded' : 'failed',
          exitCode: code,
          stdout: stdout.bytes(),
          stderr: stderr.bytes(),
          truncated: stdout.truncated || stderr.truncated,
        });
      // Output still queued in the streams is delivered on process.nextTick; setImmediate runs after it.
      const conclude = () =>
        setImmediate(() => {
          if (exitCode !== undefined) exited(exitCode);
          else if (exitSignal !== undefined) dropped(`the session on ${this.where} ended by signal ${exitSignal} without an exit status`);
          else if (this.lost !== undefined) dropped(`${this.lost} after the exec request was sent to ${this.where}`);
          else dropped(`the channel on ${this.where} closed without an exit status`);
        });
      function onSent(): void {
        sent = true;
        timer = setTimeout(() => {
          settle({
            kind: 'unknown',
            reason: 'timeout_after_send',
            detail: `no exit status within ${limits.responseTimeoutMs} ms after the exec request was sent; the channel was closed and the command left running`,
          });
          channel?.close();
        }, limits.responseTimeoutMs);
      }
      const onLost = () => {
        if (sent || exitCode !== undefined) conclude();
        else if (this.sessionOpenSent) notSent(`${this.lost ?? 'the connection closed'} before the exec request was sent`);
        else dropped(`${this.lost ?? 'the connection closed'}; whether the exec request was sent cannot be told`);
      };

      if (this.lost !== undefined) {
        notSent(`the connection to ${this.where} is closed`);
        return;
      }
      this.sessionOpenSent = false;
      this.onExecSent = onSent;
      this.lostListeners.add(onLost);
      try {
        this.client.exec(command, (error, opened) => {
          if (error !== undefined) {
            if (!sent) {
              if (typeof error.reason === 'number') notSent(`${this.where} refused to open a session channel: ${error.message}`);
              else if (this.sessionOpenSent) notSent(`the exec request was never sent: ${error.message}`);
              else dropped(`${error.message}; whether the exec request was sent cannot be told`);
            } else if (this.lost !== undefined) {
              conclude();
            } else {
              // sshd answers an exec request with failure only when it could not start the command.
              notSent(`${this.where} refused the exec request; nothing ran`);
            }
            return;
          }
          channel = opened;
          opened.on('data', (chunk: Buffer) => stdout.push(chunk));
          opened.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
          opened.on('exit', (code: number | null, signal?: string) => {
            if (typeof code === 'number') exitCode = code;
            else exitSignal = signal ?? 'unknown';
          });
          opened.on('close', conclude);
          opened.on('error', () => undefined);
          // The command gets end-of-file on stdin at once: nobody will type into it.
          opened.end();
        });
      } catch (error) {
        notSent(`the exec request was never sent: ${messageOf(error)}`);
      }
    });
  }

  /** Ends the connection. A command still running on the host is not signalled. */
  close(): void {
    this.client.end();
    // A host that does not answer the disconnect must not keep the socket open.
    setTimeout(() => this.client.destroy(), 1_000).unref();
  }

  private observe(line: string): void {
    if (SESSION_OPEN_SENT.test(line)) this.sessionOpenSent = true;
    else if (EXEC_SENT.test(line)) {
      const onSent = this.onExecSent;
      this.onExecSent = undefined;
      onSent?.();
    }
  }

  private markLost(why: string): void {
    if (this.lost !== undefined) return;
    this.lost = why;
    for (const listener of [...this.lostListeners]) listener();
  }

  private connectFailure(error: ClientError, target: SshCommandTemplate, pinnedType: string): ConnectFailure {
    const where = this.where;
    const redact = (reason: string): SshNotSentResult => ({ kind: 'not_sent', reason: this.redaction.redact(reason) });
    switch (error.level) {
      case 'client-authentication':
        return redact(`authentication as '${target.user}' at ${where} failed: the host did not accept the credential's key`);
      case 'client-timeout':
        return redact(`connect timeout: ${error.message} (${where})`);
      case 'client-socket':
        if (error.code === 'ECONNREFUSED') return redact(`connection refused by ${where}`);
        if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') return redact(`DNS lookup of ${target.host} failed: ${error.message}`);
        return redact(`connection to ${where} failed: ${error.code === undefined ? '' : `${error.code}: `}${error.message}`);
      default:
        if (/no matching host key format/i.test(error.message)) {
          return { kind: 'denied', reason: `${where} offers no ${pinnedType} host key, so the pinned key cannot be checked` };
        }
        return redact(`SSH handshake with ${where} failed: ${error.message}`);
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Keeps the first `cap` bytes of a stream and notes whether more came. */
class CappedBytes {
  private readonly chunks: Buffer[] = [];
  private length = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  push(chunk: Buffer): void {
    const room = this.cap - this.length;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(kept);
    this.length += kept.length;
  }

  bytes(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.chunks, this.length));
  }
}
