export { SshDispatcher } from './ssh-dispatcher';
export type { SshDispatcherOptions } from './ssh-dispatcher';
export { renderSshCommand, renderMarkerProbe, SshRenderError } from './render-ssh-command';
export type { RenderedSshCommand } from './render-ssh-command';
export { shellQuote } from './shell-quote';
export { MARKER_CLAIMED_ELSEWHERE, MARKER_PROBE_SCRIPT, MARKER_SETUP_FAILED, MARKER_WRAPPER_SCRIPT } from './marker-scripts';
export { sshFingerprint } from './host-key';
export type {
  MarkerAbsent,
  MarkerCompleted,
  MarkerProbe,
  MarkerProbeFailed,
  MarkerProbeRequest,
  MarkerStarted,
  SshAttempt,
  SshAttemptResult,
  SshClaimedResult,
  SshCredential,
  SshDeniedResult,
  SshExitedResult,
  SshNotSentResult,
  SshUnknownResult,
} from './ssh-attempt';
