import type { DecisionEntry } from '@oncegate/console-api';
import { followedText, Row, Time } from './format';

/** `granted`, `resolved as not executed, with a resend`: what was decided, in words. */
export function decisionText(entry: Pick<DecisionEntry, 'kind' | 'decision' | 'resend'>): string {
  if (entry.kind === 'approval') return entry.decision === 'granted' ? 'approval granted' : 'approval denied';
  return `review resolved as ${entry.decision.replace('_', ' ')}${entry.resend ? ', with a resend' : ''}`;
}

/** What followed a decision: the execution's state now, with the state's name for a reader who knows it. */
export function Followed({ entry }: { readonly entry: DecisionEntry | undefined }) {
  if (entry === undefined) return <span class="muted">not read yet; it shows at the next refresh</span>;
  return (
    <span class="followed" data-state={entry.followed.state}>
      {followedText(entry.followed)} <span class="muted">({entry.followed.state})</span>
    </span>
  );
}

/** One recorded decision: who decided what and why, when, and what followed; linked to its incident view. */
export function DecisionCard({ entry }: { readonly entry: DecisionEntry }) {
  return (
    <article class="card decision" aria-labelledby={`decision-${entry.position}`}>
      <h2 id={`decision-${entry.position}`}>
        {entry.tool} <span class="muted">by {entry.actor}</span>
      </h2>
      <dl>
        <Row label="Decision">
          <strong>{decisionText(entry)}</strong> by {entry.by} at <Time at={entry.at} />
        </Row>
        <Row label="Reason">{entry.reason}</Row>
        <Row label="Execution">
          <a href={`#/incident/${entry.executionId}`}>{entry.executionId}</a> <span class="muted">({entry.operationClass})</span>
        </Row>
        <Row label="What followed">
          <Followed entry={entry} />
        </Row>
      </dl>
    </article>
  );
}
