import { useEffect, useState } from 'preact/hooks';
import type { ApprovalTarget, DecisionFollowed } from '@oncegate/console-api';
import type { ApiError } from './api';

/** Renders JSON (recorded arguments, correlations) wrapped to the page's width. */
export function Json({ value }: { readonly value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

// The reader's own clock and zone: an approver compares a deadline or a decision with the time on their wall, so a
// time is `2026-12-04 15:02:11 CET`; the exact instant the journal holds is on hover.
const LOCAL = new Intl.DateTimeFormat('en-GB', {
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
  timeZoneName: 'short',
});

/** `2026-12-04 15:02:11 CET`: an instant in the browser's time zone, to the second. */
export function localTime(iso: string): string {
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return iso;
  const part = Object.fromEntries(LOCAL.formatToParts(time).map((item) => [item.type, item.value]));
  return `${part['year']}-${part['month']}-${part['day']} ${part['hour']}:${part['minute']}:${part['second']} ${part['timeZoneName']}`;
}

/** An instant shown in local time with its zone; the full ISO instant on hover. */
export function Time({ at }: { readonly at: string | null | undefined }) {
  if (at === null || at === undefined) return <span>—</span>;
  return (
    <time dateTime={at} title={at}>
      {localTime(at)}
    </time>
  );
}

/** `expires in 12:04`, counting down each second; `expired` past the deadline. */
export function Countdown({ until }: { readonly until: string | null }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  if (until === null) return <span>no deadline</span>;
  const left = Math.floor((Date.parse(until) - now) / 1000);
  if (left <= 0)
    return (
      <span>
        expired at <Time at={until} />
      </span>
    );
  const hours = Math.floor(left / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const seconds = String(left % 60).padStart(2, '0');
  const text = hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
  return (
    <span class={left < 60 ? 'urgent' : undefined}>
      expires in {text}{' '}
      <span class="muted">
        (<Time at={until} />)
      </span>
    </span>
  );
}

/** One `<dt>`/`<dd>` row. */
export function Row({ label, children }: { readonly label: string; readonly children: preact.ComponentChildren }) {
  return (
    <div class="row">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** What a refused or accepted decision says, announced to screen readers. */
export function Outcome({ outcome }: { readonly outcome: { readonly ok: boolean; readonly message: string } | undefined }) {
  if (outcome === undefined) return null;
  return (
    <p role={outcome.ok ? 'status' : 'alert'} class={outcome.ok ? 'decided' : 'refused'}>
      {outcome.message}
    </p>
  );
}

/**
 * What a refused request means for the person who sent it, and what to do next. (A 401 is not shown here: the page
 * goes back to the sign-in form, which says the session ended.)
 */
export function refusal(error: ApiError): string {
  switch (error.code) {
    case 'not_pending':
    case 'not_held':
      return `Refused: someone decided first. ${error.message}`;
    case 'csrf_required':
      return 'Refused: this page no longer holds the session\'s anti-forgery token (the session was renewed elsewhere). Load the page again and decide again; nothing was recorded.';
    case 'unreachable':
      return 'Not confirmed: the gateway did not answer (the network or the gateway is down). It is not known whether the decision reached it: refresh to see before deciding again.';
    case 'unauthorized':
      return 'Refused: the session ended; sign in again. Nothing was recorded.';
    case 'unavailable':
      return `Refused for now: ${error.message}. Try again in a few seconds; nothing was recorded.`;
    case 'internal':
    case 'error':
      return `The gateway failed (HTTP ${error.status}): ${error.message}. Refresh to see what was recorded before deciding again.`;
    default:
      return `Refused: ${error.message}`;
  }
}

/** Where a call goes, as its contract renders it: the HTTP method and URL, or the SSH host and command. */
export function targetText(target: ApprovalTarget): string {
  if (target.sshHost !== null) return `${target.name}: ssh ${target.sshHost} ${(target.argv ?? []).join(' ')}`;
  if (target.url !== null) return `${target.name}: ${target.method ?? ''} ${target.url}`;
  return target.inContract ? target.name : `${target.name} (the tool is no longer in the contract file)`;
}

/** What followed a decision, said plainly from the state the execution is in now. */
export function followedText(followed: DecisionFollowed): string {
  const status = followed.targetStatus !== null ? ` (status ${followed.targetStatus})` : followed.exitCode !== null ? ` (exit ${followed.exitCode})` : '';
  const answered = followed.errorAnswer ? `completed with an error answer from the target${status}` : `completed: the target answered${status}`;
  switch (followed.state) {
    case 'awaiting_approval':
      return 'decision recorded; authorization has not recorded its verdict yet';
    case 'authorized':
      return `authorized; waiting for a dispatcher to send attempt ${followed.attempts + 1}`;
    case 'dispatched':
      return `dispatched (attempt ${followed.attempts}); waiting for the target's answer`;
    case 'completed':
      return answered;
    case 'delivered':
      return `${answered}; the result was delivered to the agent`;
    case 'completed_result_not_delivered':
      return `${answered}; the result has not reached the agent`;
    case 'failed':
      return 'failed: nothing reached the target';
    case 'outcome_unknown':
      return `outcome unknown after attempt ${followed.attempts}: no answer came back; recovery is checking`;
    case 'needs_review':
      return `needs review${followed.reviewReason !== null ? ` (${followed.reviewReason})` : ''}`;
    case 'denied':
      return `denied${followed.denialBasis !== null ? ` (${followed.denialBasis})` : ''}: nothing was sent`;
    case 'not_executed':
      return 'found not executed; sent again when the agent calls again or on a resend';
    case 'abandoned':
      return 'abandoned: the gateway stopped; the outcome stays as found';
    case 'cancelled':
      return 'cancelled: nothing more is sent';
    case 'expired':
      return 'expired before it was sent';
    default:
      return followed.state;
  }
}
