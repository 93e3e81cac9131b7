import { useCallback, useEffect, useState } from 'preact/hooks';
import type { DecisionEntry, DecisionsQuery } from '@oncegate/console-api';
import { api } from './api';
import { DecisionCard } from './decision-card';
import { refusal } from './format';

const DECISIONS: ReadonlyArray<{ readonly value: string; readonly label: string }> = [
  { value: '', label: 'any decision' },
  { value: 'granted', label: 'approval granted' },
  { value: 'denied', label: 'approval denied' },
  { value: 'completed', label: 'review: completed' },
  { value: 'not_executed', label: 'review: not executed' },
  { value: 'abandoned', label: 'review: abandoned' },
  { value: 'resend', label: 'review: resend asked or confirmed' },
];

const PAGE_SIZE = 25;

/** A `datetime-local` field's value (the reader's local time) as the instant the API takes; empty stays empty. */
function instantOf(local: string): string | undefined {
  if (local === '') return undefined;
  const time = new Date(local).getTime();
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}

/**
 * The decision history: who decided what and why, when, newest first, searchable by approver, tool, decision, text
 * of the reason and time range; each decision with what followed and a link to its incident view.
 */
export function DecisionsPage({ onSignedOut }: { readonly onSignedOut: () => void }) {
  const [query, setQuery] = useState<DecisionsQuery>({});
  const [found, setFound] = useState<readonly DecisionEntry[] | undefined>(undefined);
  const [next, setNext] = useState<number | null>(null);
  const [scanned, setScanned] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const search = useCallback(
    async (asked: DecisionsQuery, before?: number) => {
      setBusy(true);
      const result = await api.decisions({ ...asked, limit: PAGE_SIZE, ...(before === undefined ? {} : { before }) });
      setBusy(false);
      if (!result.ok) {
        if (result.error.status === 401) onSignedOut();
        else setError(refusal(result.error));
        return;
      }
      setError(null);
      setFound((shown) => [...(before === undefined ? [] : (shown ?? [])), ...result.value.decisions]);
      setNext(result.value.next);
      setScanned((read) => (before === undefined ? 0 : read) + result.value.scanned);
    },
    [onSignedOut],
  );

  useEffect(() => {
    void search({});
  }, [search]);

  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = (name: string) => ((form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement).value ?? '').trim();
    const from = field('from');
    const to = field('to');
    const asked: DecisionsQuery = {
      by: field('by'),
      tool: field('tool'),
      decision: field('decision'),
      text: field('text'),
      ...(instantOf(from) === undefined ? {} : { from: instantOf(from) }),
      ...(instantOf(to) === undefined ? {} : { to: instantOf(to) }),
    };
    if (from !== '' && to !== '' && Date.parse(asked.from!) > Date.parse(asked.to!)) {
      setError('The time range ends before it starts: choose a From before the To.');
      return;
    }
    setQuery(asked);
    void search(asked);
  };

  return (
    <section aria-labelledby="decisions-title">
      <h1 id="decisions-title">Decisions</h1>
      <form class="search" role="search" aria-label="Search the decisions" onSubmit={submit}>
        <label>
          Approver <input name="by" placeholder="alice" autocomplete="off" spellcheck={false} />
        </label>
        <label>
          Tool <input name="tool" placeholder="send_payment" autocomplete="off" spellcheck={false} />
        </label>
        <label>
          Decision{' '}
          <select name="decision">
            {DECISIONS.map((choice) => (
              <option key={choice.value} value={choice.value}>
                {choice.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Reason contains <input name="text" autocomplete="off" />
        </label>
        <label>
          From (local time) <input name="from" type="datetime-local" step={1} />
        </label>
        <label>
          To (local time) <input name="to" type="datetime-local" step={1} />
        </label>
        <div class="actions">
          <button type="submit" disabled={busy}>
            Search
          </button>
        </div>
      </form>
      {error !== null && <p role="alert" class="refused">{error}</p>}
      {found === undefined && error === null && <p>Loading…</p>}
      {found !== undefined && (
        <p class="muted" role="status">
          {found.length === 0 ? 'No decision matches' : `${found.length} decision${found.length === 1 ? '' : 's'}, newest first`}
          {next !== null ? ` (read ${scanned} recorded decisions so far; older ones may match)` : ''}.
        </p>
      )}
      {found?.map((entry) => (
        <DecisionCard key={entry.position} entry={entry} />
      ))}
      {next !== null && (
        <button type="button" disabled={busy} onClick={() => void search(query, next)}>
          Show older decisions
        </button>
      )}
    </section>
  );
}
