import { useState } from 'preact/hooks';
import type { ApprovalView, DecisionEntry } from '@oncegate/console-api';
import { api, type Result } from './api';
import { DecisionCard, Followed } from './decision-card';
import { Countdown, Json, Outcome, refusal, Row, targetText, Time } from './format';
import { useQueue, type PageProps } from './queue';

type Decided = { readonly ok: boolean; readonly message: string };

/** The approvals waiting, as the queue takes them. */
const approvals = async (): Promise<Result<readonly ApprovalView[]>> => {
  const answer = await api.approvals();
  return answer.ok ? { ok: true, value: answer.value.approvals } : answer;
};

/**
 * The approval queue: every pending request with what deciding it means; approve or deny with a reason. Below it,
 * the requests decided in the last half hour (here or elsewhere), each with what followed the decision.
 */
export function ApprovalsPage(props: PageProps) {
  const { onSignedOut } = props;
  // A card someone decided on this page stays, with what the gateway answered, until the page is left.
  const { views, error, settled: decided, latest, refresh: load, onSettled: onDecided } = useQueue<ApprovalView, Decided>(approvals, 'granted,denied', props);
  const waiting = (views ?? []).filter((view) => !decided.has(view.executionId));
  const elsewhere = [...latest.values()].filter((entry) => !decided.has(entry.executionId) && !waiting.some((view) => view.executionId === entry.executionId));
  return (
    <section aria-labelledby="approvals-title">
      <div class="title">
        <h1 id="approvals-title">Approvals</h1>
        <button type="button" class="quiet" onClick={() => void load()}>
          Refresh
        </button>
      </div>
      {error !== null && <p role="alert" class="refused">{error}</p>}
      {views === undefined && <p>Loading…</p>}
      {views !== undefined && waiting.length === 0 && <p class="empty">Nothing is waiting for an approval.</p>}
      {waiting.map((view) => (
        <ApprovalCard key={view.executionId} view={view} outcome={undefined} entry={undefined} onDecided={onDecided} onSignedOut={onSignedOut} />
      ))}
      {(decided.size > 0 || elsewhere.length > 0) && (
        <section aria-labelledby="recent-title">
          <h2 id="recent-title">Recently decided</h2>
          <p class="muted">Decisions of the last 30 minutes, with what followed each; see Decisions for all of them.</p>
          {[...decided.values()].reverse().map(({ view, outcome }) => (
            <ApprovalCard
              key={view.executionId}
              view={view}
              outcome={outcome}
              entry={latest.get(view.executionId)}
              onDecided={onDecided}
              onSignedOut={onSignedOut}
            />
          ))}
          {elsewhere.map((entry) => (
            <DecisionCard key={entry.position} entry={entry} />
          ))}
        </section>
      )}
    </section>
  );
}

function ApprovalCard({
  view,
  outcome,
  entry,
  onDecided,
  onSignedOut,
}: {
  readonly view: ApprovalView;
  readonly outcome: Decided | undefined;
  /** The decision as the history records it, with what followed; `undefined` until the history shows it. */
  readonly entry: DecisionEntry | undefined;
  readonly onDecided: (view: ApprovalView, outcome: Decided) => void;
  readonly onSignedOut: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const id = view.executionId;
  const { approval } = view;
  const reasonOf = (form: HTMLFormElement) => (form.elements.namedItem('reason') as HTMLTextAreaElement).value;
  const decide = async (decision: 'approve' | 'deny', form: HTMLFormElement) => {
    const reason = reasonOf(form);
    if (reason.trim().length === 0) {
      setProblem('Say why: a reason is recorded with the decision.');
      return;
    }
    // An irreversible call is sent once approved and cannot be taken back: the approver sees what will be sent first.
    if (decision === 'approve' && view.operationClass === 'irreversible' && !confirming) {
      setProblem(null);
      setConfirming(true);
      return;
    }
    setProblem(null);
    setBusy(true);
    const result = await api.decide(id, decision, reason);
    setBusy(false);
    setConfirming(false);
    if (result.ok) {
      const after = result.value.approval;
      onDecided(result.value, { ok: true, message: `Recorded: ${after.decision} by ${after.decidedBy}.` });
    } else if (result.error.status === 401) {
      onSignedOut();
    } else if (result.error.code === 'csrf_required' || result.error.code === 'unreachable' || result.error.status >= 500) {
      // Nothing is known to be recorded: the card stays open to try again.
      setProblem(refusal(result.error));
    } else {
      onDecided(view, { ok: false, message: refusal(result.error) });
    }
  };
  const open = outcome === undefined && approval.decision === 'pending';
  return (
    <article class="card" aria-labelledby={`approval-${id}`}>
      <h2 id={`approval-${id}`}>
        {view.tool} <span class="muted">by {view.actor}</span>
      </h2>
      <dl>
        <Row label="Execution">
          <a href={`#/incident/${id}`}>{id}</a>
        </Row>
        <Row label="Actor">{view.actor}</Row>
        <Row label="Run">{view.runId ?? 'none'}</Row>
        <Row label="Tool">
          {view.tool} ({view.operationClass}, {view.channel})
        </Row>
        <Row label="Target">{targetText(view.target)}</Row>
        <Row label="Arguments">
          <Json value={view.arguments} />
          <span class="muted">Secret arguments are shown as HMACs, never their values.</span>
        </Row>
        <Row label="Scope">
          approval for {approval.scope === 'run' ? 'the run' : 'this execution'}; intent scope {view.intentScope}
        </Row>
        <Row label="Requested">
          by {approval.requestedBy} at <Time at={approval.requestedAt} />: {approval.reason}
        </Row>
        <Row label="Granting does">{approval.grants}</Row>
        <Row label="Deadline">{approval.decision === 'pending' ? <Countdown until={approval.expiresAt} /> : <Time at={approval.expiresAt} />}</Row>
        <Row label="Attached retries">
          {view.attachedCalls.length === 0 ? (
            'none'
          ) : (
            <ul class="plain">
              {view.attachedCalls.map((call) => (
                <li key={call.attachedAt}>
                  retry at <Time at={call.attachedAt} />, given {call.returned} <Json value={call.correlation} />
                </li>
              ))}
            </ul>
          )}
        </Row>
        <Row label="Decision">
          {entry !== undefined ? (
            <>
              {entry.decision} by {entry.by} at <Time at={entry.at} />: {entry.reason}
            </>
          ) : approval.decision === 'pending' || approval.decidedBy === null ? (
            approval.decision
          ) : (
            <>
              {approval.decision} by {approval.decidedBy} at <Time at={approval.decidedAt} />
              {approval.decisionReason !== null ? `: ${approval.decisionReason}` : ''}
            </>
          )}
        </Row>
        {!open && (
          <Row label="What followed">
            <Followed entry={entry} />
          </Row>
        )}
      </dl>
      {open && (
        <form class="decide" onSubmit={(event) => event.preventDefault()}>
          <label for={`reason-${id}`}>Reason for the decision</label>
          <textarea id={`reason-${id}`} name="reason" rows={2} maxLength={1000} required readOnly={confirming} />
          {confirming ? (
            <div class="confirm" role="group" aria-labelledby={`confirm-${id}`}>
              <p id={`confirm-${id}`}>
                <strong>Approving sends this irreversible call now, and it cannot be taken back:</strong> {targetText(view.target)}, with the arguments
                above, under execution {id} (its idempotency key). Nothing sends it twice.
              </p>
              <div class="actions">
                <button type="button" disabled={busy} onClick={(event) => void decide('approve', (event.currentTarget as HTMLButtonElement).form!)}>
                  Approve and send
                </button>
                <button type="button" class="quiet" disabled={busy} onClick={() => setConfirming(false)}>
                  Cancel
                </button>
              </div>
            </div>
          ) : (
            <div class="actions">
              <button type="button" disabled={busy} onClick={(event) => void decide('approve', (event.currentTarget as HTMLButtonElement).form!)}>
                Approve
              </button>
              <button type="button" class="danger" disabled={busy} onClick={(event) => void decide('deny', (event.currentTarget as HTMLButtonElement).form!)}>
                Deny
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
