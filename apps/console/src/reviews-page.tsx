import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ReviewResolution as Resolution, ReviewView } from '@oncegate/console-api';
import { api } from './api';
import { Json, Outcome, Row } from './format';

type Resolved = { readonly ok: boolean; readonly message: string };

const REFRESH_MS = 5_000;

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

/** The review queue: why each execution is held, the evidence, and a resolution with a reason. */
export function ReviewsPage({ onSignedOut }: { readonly onSignedOut: () => void }) {
  const [views, setViews] = useState<readonly ReviewView[] | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [resolved, setResolved] = useState<ReadonlyMap<string, { view: ReviewView; outcome: Resolved }>>(new Map());

  const load = useCallback(async () => {
    const result = await api.reviews();
    if (result.ok) {
      setViews(result.value.reviews);
      setError(null);
    } else if (result.error.status === 401) onSignedOut();
    else setError(result.error.message);
  }, [onSignedOut]);

  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [load]);

  const onResolved = (view: ReviewView, outcome: Resolved) => setResolved((before) => new Map(before).set(view.executionId, { view, outcome }));
  const shown = [...(views ?? [])];
  for (const { view } of resolved.values()) if (!shown.some((item) => item.executionId === view.executionId)) shown.push(view);
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
        <ReviewCard key={view.executionId} view={resolved.get(view.executionId)?.view ?? view} outcome={resolved.get(view.executionId)?.outcome} onResolved={onResolved} onSignedOut={onSignedOut} />
      ))}
    </section>
  );
}

function Evidence({ view }: { readonly view: ReviewView }) {
  const { markerProbe, statusQuery } = view.evidence;
  if (markerProbe === null && statusQuery === null) return <>none gathered for this attempt (an {view.operationClass} call is not probed)</>;
  return (
    <ul class="plain">
      {markerProbe !== null && (
        <li>
          marker probe at {markerProbe.probedAt}: {markerProbe.marker}
          {markerProbe.exitStatus !== null ? `, exit ${markerProbe.exitStatus}` : ''}
          {markerProbe.failure ? ` (${markerProbe.failure})` : ''}
        </li>
      )}
      {statusQuery !== null && (
        <li>
          status query at {statusQuery.queriedAt}: precondition {statusQuery.preconditionHolds ? 'holds' : 'no longer holds'}
          {statusQuery.observedStatus !== null ? ` (${statusQuery.observedStatus})` : ''}
        </li>
      )}
    </ul>
  );
}

function ReviewCard({
  view,
  outcome,
  onResolved,
  onSignedOut,
}: {
  readonly view: ReviewView;
  readonly outcome: Resolved | undefined;
  readonly onResolved: (view: ReviewView, outcome: Resolved) => void;
  readonly onSignedOut: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const id = view.executionId;
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    // The confirming form of a resend waiting for a second operator has no choice: it is a not-executed resend.
    const choice = form.elements.namedItem('resolution') as RadioNodeList | null;
    const resolution = (choice === null ? 'not_executed' : choice.value) as Resolution | '';
    const reason = (form.elements.namedItem('reason') as HTMLTextAreaElement).value;
    const resendBox = form.elements.namedItem('resend') as HTMLInputElement | null;
    const resend = resendBox === null ? true : resendBox.checked;
    if (resolution === '' || reason.trim().length === 0) {
      setProblem('Choose a resolution and say why.');
      return;
    }
    if (resend && resolution !== 'not_executed') {
      setProblem("Only a not-executed resolution can be sent again: untick 'send it again now' or choose Not executed.");
      return;
    }
    setProblem(null);
    setBusy(true);
    const result = await api.resolve(id, resolution, reason, resend);
    setBusy(false);
    if (result.ok) {
      const review = result.value.review;
      const step = nextStep(result.value);
      onResolved(result.value, {
        ok: true,
        message: `Recorded: resolved as ${review?.resolution} by ${review?.resolvedBy}; the execution is now ${result.value.state}.${step === '' ? '' : ` ${step}`}`,
      });
    } else if (result.error.status === 401) onSignedOut();
    else onResolved(view, { ok: false, message: `Refused: ${result.error.message}` });
  };
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
          {review === null ? 'not held' : `${review.reason} since ${review.requiredAt}. ${WHY[review.reason] ?? ''}`}
        </Row>
        <Row label="Evidence">
          <Evidence view={view} />
        </Row>
        <Row label="Target">
          {view.record.target} {view.record.method ?? ''} ({view.operationClass})
          {view.targetStatus !== null ? `, last target status ${view.targetStatus}${view.errorAnswer ? ' (an error answer)' : ''}` : ''}
        </Row>
        <Row label="Arguments">
          <Json value={view.record.arguments} />
        </Row>
        {review?.resolution != null && (
          <Row label="Resolution">
            {review.resolution} by {review.resolvedBy} at {review.resolvedAt}
            {review.resend !== null &&
              `; resend asked by ${review.resend.requestedBy} at ${review.resend.requestedAt}${review.resend.confirmedBy === null ? ', waiting for a second operator' : `, confirmed by ${review.resend.confirmedBy}`}`}
          </Row>
        )}
      </dl>
      <details>
        <summary>Events ({view.events.length})</summary>
        <ol class="events">
          {view.events.map((event) => (
            <li key={event.revision}>
              <strong>{event.type}</strong> <span class="muted">#{event.revision} {event.recordedAt} {event.actor}</span> {event.detail}
            </li>
          ))}
        </ol>
      </details>
      {outcome === undefined && view.state === 'needs_review' && (
        <form class="decide" onSubmit={(event) => void submit(event)}>
          <fieldset>
            <legend>Resolution</legend>
            {CHOICES.map((choice) => (
              <label key={choice.value} class="choice">
                <input type="radio" name="resolution" value={choice.value} required /> {choice.label}: <span class="muted">{choice.hint}</span>
              </label>
            ))}
          </fieldset>
          <label class="choice">
            <input type="checkbox" name="resend" /> Send it again now, with Not executed:{' '}
            <span class="muted">
              {view.operationClass === 'irreversible'
                ? 'an irreversible call is sent again only once a second operator confirms it'
                : 'attempt sent at once under the same execution id, without waiting for the agent'}
            </span>
          </label>
          <label for={`resolve-reason-${id}`}>Reason for the resolution</label>
          <textarea id={`resolve-reason-${id}`} name="reason" rows={2} maxLength={1000} required />
          <div class="actions">
            <button type="submit" disabled={busy}>
              Resolve
            </button>
          </div>
          {problem !== null && <p role="alert" class="refused">{problem}</p>}
        </form>
      )}
      {outcome === undefined && resendWaiting !== null && (
        <form class="decide" onSubmit={(event) => void submit(event)}>
          <p>
            {resendWaiting.requestedBy} asked to send this irreversible call again at {resendWaiting.requestedAt}. A second operator confirms it: it is
            then sent at once under the same execution id.
          </p>
          <label for={`resend-reason-${id}`}>Reason for confirming the resend</label>
          <textarea id={`resend-reason-${id}`} name="reason" rows={2} maxLength={1000} required />
          <div class="actions">
            <button type="submit" disabled={busy}>
              Confirm the resend
            </button>
          </div>
          {problem !== null && <p role="alert" class="refused">{problem}</p>}
        </form>
      )}
      <Outcome outcome={outcome} />
    </article>
  );
}
