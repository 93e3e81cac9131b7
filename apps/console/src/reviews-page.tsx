import { useState } from 'preact/hooks';
import type { DecisionEntry, ReviewResolution as Resolution, ReviewView } from '@oncegate/console-api';
import { api, type Result } from './api';
import { DecisionCard, Followed } from './decision-card';
import { Json, Outcome, refusal, Row, targetText, Time } from './format';
import { useQueue, type PageProps } from './queue';

type Resolved = { readonly ok: boolean; readonly message: string };

const WHY: Readonly<Record<string, string>> = {
  irreversible_outcome_unknown: 'An irreversible call may have reached the target and no outcome came back; the gateway never sends it again on its own.',
  precondition_no_longer_holds: "The conditional write's precondition no longer holds: the target changed, perhaps by this very call.",
  marker_started: 'The remote command left its marker: it started, and may or may not have finished.',
  marker_probe_failed: 'The marker of the remote command could not be read.',
  attempt_limit_reached: 'Recovery reached the attempt limit without a definite outcome.',
};

const CHOICES: ReadonlyArray<{ readonly value: Resolution; readonly label: string; readonly hint: string }> = [
  { value: 'completed', label: 'Completed', hint: 'the effect happened; the execution is recorded as completed' },
  {
    value: 'not_executed',
    label: 'Not executed',
    hint: "nothing happened; nothing is sent until the agent calls again, which sends it under the same execution id (or tick 'send it again now')",
  },
  { value: 'abandoned', label: 'Abandoned', hint: 'stop here; the outcome stays as found' },
];

/** What the recorded resolution does next, as the review queue says it (nothing is sent by a resolution alone). */
function nextStep(view: ReviewView): string {
  const resend = view.review?.resend ?? null;
  switch (view.state) {
    case 'not_executed':
      return resend !== null && resend.confirmedBy === null
        ? 'The resend waits for a second operator; until then it is sent again only if the agent calls again.'
        : 'Nothing is sent until the agent calls again with the same arguments.';
    case 'authorized':
    case 'dispatched':
      return `Attempt ${view.state === 'authorized' ? view.attempts + 1 : view.attempts} is sent under the same execution id${resend?.confirmedBy ? ` (resend asked by ${resend.requestedBy}, confirmed by ${resend.confirmedBy})` : ''}.`;
    default:
      return '';
  }
}

/** The executions held for review, as the queue takes them. */
const reviews = async (): Promise<Result<readonly ReviewView[]>> => {
  const answer = await api.reviews();
  return answer.ok ? { ok: true, value: answer.value.reviews } : answer;
};

/**
 * The review queue: why each execution is held, the evidence, and a resolution with a reason. Below it, the reviews
 * resolved in the last half hour elsewhere, each with what followed.
 */
export function ReviewsPage(props: PageProps) {
  const { onSignedOut } = props;
  const { views, error, settled: resolved, latest, refresh: load, onSettled: onResolved } = useQueue<ReviewView, Resolved>(reviews, 'completed,not_executed,abandoned', props);
  const shown = [...(views ?? [])];
  for (const { view } of resolved.values()) if (!shown.some((item) => item.executionId === view.executionId)) shown.push(view);
  const elsewhere = [...latest.values()].filter((entry) => !shown.some((view) => view.executionId === entry.executionId));
  return (
    <section aria-labelledby="reviews-title">
      <div class="title">
        <h1 id="reviews-title">Review queue</h1>
        <button type="button" class="quiet" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {error !== null && <p role="alert" class="refused">{error}</p>}
      {views === undefined && <p>Loading…</p>}
      {views !== undefined && shown.length === 0 && <p class="empty">Nothing is held for review.</p>}
      {shown.map((view) => (
        <ReviewCard
          key={view.executionId}
          view={resolved.get(view.executionId)?.view ?? view}
          outcome={resolved.get(view.executionId)?.outcome}
          entry={latest.get(view.executionId)}
          onResolved={onResolved}
          onSignedOut={onSignedOut}
        />
      ))}
      {elsewhere.length > 0 && (
        <section aria-labelledby="resolved-title">
          <h2 id="resolved-title">Recently resolved</h2>
          <p class="muted">Reviews resolved in the last 30 minutes, with what followed each; see Decisions for all of them.</p>
          {elsewhere.map((entry) => (
            <DecisionCard key={entry.position} entry={entry} />
          ))}
        </section>
      )}
    </section>
  );
}

/** What recovery observed of the attempts: timeouts, a lost connection, a status query's or a marker probe's finding. */
const OBSERVED_EVENTS: ReadonlySet<string> = new Set(['Dispatched', 'AttemptTaskStarted', 'OutcomeUnknown', 'AttemptTaskChecked', 'OutcomeObserved', 'StatusQueried', 'MarkerProbed']);

function Evidence({ view }: { readonly view: ReviewView }) {
  const { markerProbe, statusQuery } = view.evidence;
  const observed = view.events.filter((event) => OBSERVED_EVENTS.has(event.type));
  return (
    <ul class="plain evidence">
      {observed.map((event) => (
        <li key={event.revision}>
          <Time at={event.recordedAt} /> <strong>{event.type}</strong> {event.detail}
        </li>
      ))}
      {markerProbe !== null && (
        <li>
          marker probe at <Time at={markerProbe.probedAt} />: {markerProbe.marker}
          {markerProbe.exitStatus !== null ? `, exit ${markerProbe.exitStatus}` : ''}
          {markerProbe.failure ? ` (${markerProbe.failure})` : ''}
          {markerProbe.keptOutput ? `; output kept on ${markerProbe.keptOutput.host}: ${markerProbe.keptOutput.paths.join(', ')}` : ''}
        </li>
      )}
      {statusQuery !== null && (
        <li>
          status query at <Time at={statusQuery.queriedAt} />: precondition {statusQuery.preconditionHolds ? 'holds' : 'no longer holds'}
          {statusQuery.observedStatus !== null ? ` (${statusQuery.observedStatus})` : ''}
        </li>
      )}
      {markerProbe === null && statusQuery === null && (
        <li class="muted">no marker probe or status query for this attempt (an {view.operationClass} call is not probed)</li>
      )}
    </ul>
  );
}

function ReviewCard({
  view,
  outcome,
  entry,
  onResolved,
  onSignedOut,
}: {
  readonly view: ReviewView;
  readonly outcome: Resolved | undefined;
  /** The resolution as the history records it, with what followed; `undefined` until the history shows it. */
  readonly entry: DecisionEntry | undefined;
  readonly onResolved: (view: ReviewView, outcome: Resolved) => void;
  readonly onSignedOut: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  // A resend waiting for the operator to confirm what will be sent: the resolution and reason they gave.
  const [confirming, setConfirming] = useState<{ readonly resolution: Resolution; readonly reason: string } | null>(null);
  const id = view.executionId;
  const send = async (resolution: Resolution, reason: string, resend: boolean) => {
    setProblem(null);
    setBusy(true);
    const result = await api.resolve(id, resolution, reason, resend);
    setBusy(false);
    setConfirming(null);
    if (result.ok) {
      const review = result.value.review;
      const step = nextStep(result.value);
      onResolved(result.value, {
        ok: true,
        message: `Recorded: resolved as ${review?.resolution} by ${review?.resolvedBy}; the execution is now ${result.value.state}.${step === '' ? '' : ` ${step}`}`,
      });
    } else if (result.error.status === 401) onSignedOut();
    else if (result.error.code === 'csrf_required' || result.error.code === 'unreachable' || result.error.status >= 500) setProblem(refusal(result.error));
    else onResolved(view, { ok: false, message: refusal(result.error) });
  };
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    // The confirming form of a resend waiting for a second operator has no choice: it is a not-executed resend.
    const choice = form.elements.namedItem('resolution') as RadioNodeList | null;
    const resolution = (choice === null ? 'not_executed' : choice.value) as Resolution | '';
    const reason = (form.elements.namedItem('reason') as HTMLTextAreaElement).value;
    const resendBox = form.elements.namedItem('resend') as HTMLInputElement | null;
    const resend = resendBox === null ? true : resendBox.checked;
    // The form is not validated by the browser (its bubble is easy to miss): every omission is said here.
    if (resolution === '') {
      setProblem('Choose a resolution first: Completed, Not executed or Abandoned. Nothing was recorded.');
      return;
    }
    if (reason.trim().length === 0) {
      setProblem('Say why: a reason is recorded with the resolution. Nothing was recorded.');
      return;
    }
    if (resend && resolution !== 'not_executed') {
      setProblem("Only a not-executed resolution can be sent again: untick 'send it again now' or choose Not executed.");
      return;
    }
    if (resend) {
      setProblem(null);
      setConfirming({ resolution, reason });
      return;
    }
    void send(resolution, reason, false);
  };
  const irreversible = view.operationClass === 'irreversible';
  const firstAsk = irreversible && view.state === 'needs_review';
  const confirmation = confirming !== null && (
    <div class="confirm" role="group" aria-labelledby={`confirm-${id}`}>
      <p id={`confirm-${id}`}>
        <strong>{firstAsk ? 'This asks a second operator to send it again:' : 'This sends it again now:'}</strong> {targetText(view.target)}, with the recorded arguments,
        as attempt {view.attempts + 1} under execution {id} (the same idempotency key).
        {firstAsk ? ' Nothing is sent until another operator confirms the resend.' : ''}
      </p>
      <div class="actions">
        <button type="button" disabled={busy} onClick={() => void send(confirming.resolution, confirming.reason, true)}>
          {firstAsk ? 'Ask for the resend' : 'Send it again'}
        </button>
        <button type="button" class="quiet" disabled={busy} onClick={() => setConfirming(null)}>
          Cancel
        </button>
      </div>
    </div>
  );
  const review = view.review;
  const resendWaiting = view.state === 'not_executed' && review?.resend != null && review.resend.confirmedBy === null ? review.resend : null;
  return (
    <article class="card" aria-labelledby={`review-${id}`}>
      <h2 id={`review-${id}`}>
        {view.tool} <span class="muted">by {view.actor}</span>
      </h2>
      <dl>
        <Row label="Execution">
          <a href={`#/incident/${id}`}>{id}</a> ({view.state}, {view.attempts} attempt{view.attempts === 1 ? '' : 's'})
        </Row>
        <Row label="Why held">
          {review === null ? (
            'not held'
          ) : (
            <>
              {review.reason} since <Time at={review.requiredAt} />. {WHY[review.reason] ?? ''}
            </>
          )}
        </Row>
        <Row label="Evidence">
          <Evidence view={view} />
        </Row>
        <Row label="Target">
          {targetText(view.target)} <span class="muted">({view.record.channel}, {view.operationClass})</span>
          {view.targetStatus !== null ? `; last target status ${view.targetStatus}${view.errorAnswer ? ' (an error answer)' : ''}` : ''}
        </Row>
        <Row label="Arguments">
          <Json value={view.record.arguments} />
        </Row>
        {review?.resolution != null && (
          <Row label="Resolution">
            {review.resolution} by {review.resolvedBy} at <Time at={review.resolvedAt} />
            {review.resend !== null && (
              <>
                ; resend asked by {review.resend.requestedBy} at <Time at={review.resend.requestedAt} />
                {review.resend.confirmedBy === null ? ', waiting for a second operator' : `, confirmed by ${review.resend.confirmedBy}`}
              </>
            )}
          </Row>
        )}
        {outcome?.ok === true && (
          <Row label="What followed">
            <Followed entry={entry} />
          </Row>
        )}
      </dl>
      <details>
        <summary>Events ({view.events.length})</summary>
        <ol class="events">
          {view.events.map((event) => (
            <li key={event.revision}>
              <strong>{event.type}</strong>{' '}
              <span class="muted">
                #{event.revision} <Time at={event.recordedAt} /> {event.actor}
              </span>{' '}
              {event.detail}
            </li>
          ))}
        </ol>
      </details>
      {outcome === undefined && view.state === 'needs_review' && (
        <form class="decide" noValidate onSubmit={submit}>
          <fieldset disabled={confirming !== null}>
            <legend>Resolution</legend>
            {CHOICES.map((choice) => (
              <label key={choice.value} class="choice">
                <input type="radio" name="resolution" value={choice.value} required /> {choice.label}: <span class="muted">{choice.hint}</span>
              </label>
            ))}
          </fieldset>
          <label class="choice">
            <input type="checkbox" name="resend" disabled={confirming !== null} /> Send it again now, with Not executed:{' '}
            <span class="muted">
              {view.operationClass === 'irreversible'
                ? 'an irreversible call is sent again only once a second operator confirms it'
                : 'attempt sent at once under the same execution id, without waiting for the agent'}
            </span>
          </label>
          <label for={`resolve-reason-${id}`}>Reason for the resolution</label>
          <textarea id={`resolve-reason-${id}`} name="reason" rows={2} maxLength={1000} required readOnly={confirming !== null} />
          {confirmation || (
            <div class="actions">
              <button type="submit" disabled={busy}>
                Resolve
              </button>
            </div>
          )}
          {problem !== null && <p role="alert" class="refused">{problem}</p>}
        </form>
      )}
      {outcome === undefined && resendWaiting !== null && (
        <form class="decide" noValidate onSubmit={submit}>
          <p>
            {resendWaiting.requestedBy} asked to send this irreversible call again at <Time at={resendWaiting.requestedAt} />. A second operator
            confirms it: it is then sent at once under the same execution id.
          </p>
          <label for={`resend-reason-${id}`}>Reason for confirming the resend</label>
          <textarea id={`resend-reason-${id}`} name="reason" rows={2} maxLength={1000} required readOnly={confirming !== null} />
          {confirmation || (
            <div class="actions">
              <button type="submit" disabled={busy}>
                Confirm the resend
              </button>
            </div>
          )}
          {problem !== null && <p role="alert" class="refused">{problem}</p>}
        </form>
      )}
      <Outcome outcome={outcome} />
    </article>
  );
}
