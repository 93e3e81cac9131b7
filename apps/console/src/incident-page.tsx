import { useEffect, useState } from 'preact/hooks';
import type { Investigation } from '@oncegate/console-api';
import { api } from './api';
import { refusal, Row, Time } from './format';

/** One execution's events in order, its attached retries and the five answers (`oncegate investigate`). */
export function IncidentPage({ executionId, onSignedOut }: { readonly executionId: string; readonly onSignedOut: () => void }) {
  const [found, setFound] = useState<Investigation | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setFound(undefined);
    setError(null);
    if (executionId === '') return;
    void api.investigation(executionId).then((result) => {
      if (result.ok) setFound(result.value);
      else if (result.error.status === 401) onSignedOut();
      else setError(result.error.code === 'not_found' || result.error.code === 'invalid_execution_id' ? result.error.message : refusal(result.error));
    });
  }, [executionId, onSignedOut]);
  const open = (event: Event) => {
    event.preventDefault();
    const id = ((event.currentTarget as HTMLFormElement).elements.namedItem('execution') as HTMLInputElement).value.trim();
    location.hash = `#/incident/${encodeURIComponent(id)}`;
  };
  return (
    <section aria-labelledby="incident-title">
      <h1 id="incident-title">Incident view</h1>
      <form class="lookup" onSubmit={open}>
        <label for="execution">Execution id</label>
        <input id="execution" name="execution" placeholder="ex_01…" defaultValue={executionId} autocomplete="off" spellcheck={false} required />
        <button type="submit">Show</button>
      </form>
      {error !== null && <p role="alert" class="refused">{error}</p>}
      {executionId !== '' && found === undefined && error === null && <p>Loading…</p>}
      {found !== undefined && <InvestigationView found={found} />}
    </section>
  );
}

function InvestigationView({ found }: { readonly found: Investigation }) {
  const attaches = found.answers.secondCall.facts.attaches;
  const answers = [found.answers.processes, found.answers.firstCall, found.answers.outcome, found.answers.delivery, found.answers.secondCall, found.answers.told];
  return (
    <>
      <h2>Executions</h2>
      <ul class="plain">
        {found.executions.map((execution) => (
          <li key={execution.executionId}>
            <strong>{execution.executionId}</strong> {execution.tool} by {execution.actor}, scope {execution.scope}, accepted <Time at={execution.acceptedAt} />,
            now <strong>{execution.status}</strong>
          </li>
        ))}
      </ul>
      <h2 id="timeline-title">Events in order</h2>
      <ol class="timeline" aria-labelledby="timeline-title">
        {found.timeline.map((entry) => (
          <li key={entry.position} data-type={entry.type}>
            <span class="event-type">{entry.type}</span>
            <span class="muted">
              {' '}
              <Time at={entry.time} /> · {entry.stream} #{entry.revision} · position {entry.position}
              {entry.actor !== null ? ` · ${entry.actor}` : ''}
            </span>
            {entry.detail !== '' && <div>{entry.detail}</div>}
            {entry.correlation !== '' && <div class="muted">{entry.correlation}</div>}
          </li>
        ))}
      </ol>
      <h2 id="retries-title">Attached retries</h2>
      {attaches.length === 0 ? (
        <p>No later call attached to this execution.</p>
      ) : (
        <ul class="retries plain" aria-labelledby="retries-title">
          {attaches.map((attach) => (
            <li key={attach.position}>
              retry at <Time at={attach.at} /> (position {attach.position}) attached to {attach.executionId}, given {attach.returned}
              {attach.replayed ? ', replayed' : ''}
              {attach.jsonRpcId !== null ? `; JSON-RPC id ${attach.jsonRpcId}` : ''}
              {attach.sessionId !== null ? `; session ${attach.sessionId}` : ''}
            </li>
          ))}
        </ul>
      )}
      <h2>Answers</h2>
      <dl>
        {answers.map((answer) => (
          <Row key={answer.question} label={answer.question}>
            {answer.summary} <span class="muted">(positions {answer.evidence.join(', ') || 'none'})</span>
          </Row>
        ))}
      </dl>
    </>
  );
}
