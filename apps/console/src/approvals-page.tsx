import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ApprovalView } from '@oncegate/console-api';
import { api } from './api';
import { Countdown, Json, Outcome, Row } from './format';

type Decided = { readonly ok: boolean; readonly message: string };

const REFRESH_MS = 5_000;

/** The approval queue: every pending request with what deciding it means; approve or deny with a reason. */
export function ApprovalsPage({ onSignedOut }: { readonly onSignedOut: () => void }) {
  const [views, setViews] = useState<readonly ApprovalView[] | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  // A card someone decided on this page stays, with what the gateway answered, until the page is left.
  const [decided, setDecided] = useState<ReadonlyMap<string, { view: ApprovalView; outcome: Decided }>>(new Map());

  const load = useCallback(async () => {
    const result = await api.approvals();
    if (result.ok) {
      setViews(result.value.approvals);
      setError(null);
    } else if (result.error.status === 401) onSignedOut();
    else setError(result.error.message);
  }, [onSignedOut]);

  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [load]);

  const onDecided = (view: ApprovalView, outcome: Decided) => setDecided((before) => new Map(before).set(view.executionId, { view, outcome }));

  const shown = [...(views ?? [])];
  for (const { view } of decided.values()) if (!shown.some((item) => item.executionId === view.executionId)) shown.push(view);
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
      {views !== undefined && shown.length === 0 && <p class="empty">Nothing is waiting for an approval.</p>}
      {shown.map((view) => (
        <ApprovalCard key={view.executionId} view={decided.get(view.executionId)?.view ?? view} outcome={decided.get(view.executionId)?.outcome} onDecided={onDecided} onSignedOut={onSignedOut} />
      ))}
    </section>
  );
}

function targetText(view: ApprovalView): string {
  const { target } = view;
  if (target.sshHost !== null) return `${target.name}: ssh ${target.sshHost} ${(target.argv ?? []).join(' ')}`;
  if (target.url !== null) return `${target.name}: ${target.method ?? ''} ${target.url}`;
  return target.inContract ? target.name : `${target.name} (the tool is no longer in the contract file)`;
}

function ApprovalCard({
  view,
  outcome,
  onDecided,
  onSignedOut,
}: {
  readonly view: ApprovalView;
  readonly outcome: Decided | undefined;
  readonly onDecided: (view: ApprovalView, outcome: Decided) => void;
  readonly onSignedOut: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const id = view.executionId;
  const { approval } = view;
  const decide = async (decision: 'approve' | 'deny', form: HTMLFormElement) => {
    const reason = (form.elements.namedItem('reason') as HTMLTextAreaElement).value;
    if (reason.trim().length === 0) {
      setProblem('Say why: a reason is recorded with the decision.');
      return;
    }
    setProblem(null);
    setBusy(true);
    const result = await api.decide(id, decision, reason);
    setBusy(false);
    if (result.ok) {
      onDecided(result.value, { ok: true, message: `Recorded: ${result.value.summary}.` });
    } else if (result.error.status === 401) {
      onSignedOut();
    } else {
      onDecided(view, { ok: false, message: `Refused: ${result.error.message}` });
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
          <a href={`#/incident/${id}`}>{id}</a> ({view.state})
        </Row>
        <Row label="Actor">{view.actor}</Row>
        <Row label="Run">{view.runId ?? 'none'}</Row>
        <Row label="Tool">
          {view.tool} ({view.operationClass}, {view.channel})
        </Row>
        <Row label="Target">{targetText(view)}</Row>
        <Row label="Arguments">
          <Json value={view.arguments} />
          <span class="muted">Secret arguments are shown as HMACs, never their values.</span>
        </Row>
        <Row label="Scope">
          approval for {approval.scope === 'run' ? 'the run' : 'this execution'}; intent scope {view.intentScope}
        </Row>
        <Row label="Requested">
          by {approval.requestedBy} at {approval.requestedAt}: {approval.reason}
        </Row>
        <Row label="Granting does">{approval.grants}</Row>
        <Row label="Deadline">{approval.decision === 'pending' ? <Countdown until={approval.expiresAt} /> : approval.expiresAt ?? 'none'}</Row>
        <Row label="Attached retries">
          {view.attachedCalls.length === 0 ? (
            'none'
          ) : (
            <ul class="plain">
              {view.attachedCalls.map((call) => (
                <li key={call.attachedAt}>
                  retry at {call.attachedAt}, given {call.returned} <Json value={call.correlation} />
                </li>
              ))}
            </ul>
          )}
        </Row>
        <Row label="Decision">{view.summary}</Row>
      </dl>
      {open && (
        <form class="decide" onSubmit={(event) => event.preventDefault()}>
          <label for={`reason-${id}`}>Reason for the decision</label>
          <textarea id={`reason-${id}`} name="reason" rows={2} maxLength={1000} required />
          <div class="actions">
            <button type="button" disabled={busy} onClick={(event) => void decide('approve', (event.currentTarget as HTMLButtonElement).form!)}>
              Approve
            </button>
            <button type="button" class="danger" disabled={busy} onClick={(event) => void decide('deny', (event.currentTarget as HTMLButtonElement).form!)}>
              Deny
            </button>
          </div>
          {problem !== null && <p role="alert" class="refused">{problem}</p>}
        </form>
      )}
      <Outcome outcome={outcome} />
    </article>
  );
}
