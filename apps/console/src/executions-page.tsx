import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ExecutionRowView, ExecutionsIndexLag } from '@oncegate/console-api';
import { api, type ApiError } from './api';
import { Time } from './format';

// The console's bundle takes nothing of the workspace at run time, so the domain's names are written here again;
// test/e2e/console-executions.e2e.spec.ts checks them against @oncegate/domain's.
/** The operation classes, from the least to the most dangerous. */
export const OPERATION_CLASSES = ['read_only', 'idempotent_write', 'conditional_write', 'irreversible', 'remote_command'] as const;

/** Every state an execution can be in, in the lifecycle's order (the domain's `EXECUTION_STATUSES` but `initial`). */
export const EXECUTION_STATES = [
  'accepted',
  'awaiting_approval',
  'authorized',
  'denied',
  'cancelled',
  'dispatched',
  'completed',
  'failed',
  'outcome_unknown',
  'needs_review',
  'delivered',
  'completed_result_not_delivered',
  'expired',
  'abandoned',
  'not_executed',
] as const;

/** The time windows offered; each is a `since` the server reads as a time ago, so a linked search stays relative. */
const WINDOWS: ReadonlyArray<{ readonly since: string; readonly label: string }> = [
  { since: '', label: 'any time' },
  { since: '15m', label: 'last 15 minutes' },
  { since: '1h', label: 'last hour' },
  { since: '1d', label: 'last day' },
];
const CUSTOM = 'custom';

/** The text filters: the URL's parameter, the field's label and an example. Each takes several values, comma-separated. */
const TEXT_FILTERS: ReadonlyArray<{ readonly name: string; readonly label: string; readonly example: string }> = [
  { name: 'tool', label: 'Tool', example: 'send_payment' },
  { name: 'actor', label: 'Agent', example: 'agent:dev' },
  { name: 'run', label: 'Run', example: 'session:…' },
  { name: 'channel', label: 'Channel', example: 'http' },
  { name: 'host', label: 'Target host', example: 'demo' },
];

/** `1h`, `30m`: a time ago, as the server reads it. */
const TIME_AGO = /^\d+\s*[smhdw]$/;

/** Every value of a URL parameter, whether repeated or comma-separated. */
function valuesOf(parameters: URLSearchParams, name: string): string[] {
  return parameters
    .getAll(name)
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
}

/** An ISO instant as a `datetime-local` field's value, in the reader's zone; empty when it is not an instant. */
function localInputOf(text: string | null): string {
  const time = text === null || TIME_AGO.test(text.trim()) ? Number.NaN : Date.parse(text);
  if (Number.isNaN(time)) return '';
  return new Date(time - new Date(time).getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
}

/** A `datetime-local` field's value (the reader's local time) as the instant the URL carries; empty stays empty. */
function instantOf(local: string): string {
  const time = local === '' ? Number.NaN : new Date(local).getTime();
  return Number.isNaN(time) ? '' : new Date(time).toISOString();
}

/**
 * Which window a URL's `since`/`until` are: an offered one, another time ago (offered too, so the form shows what
 * was asked), or custom.
 */
function windowOf(parameters: URLSearchParams): string {
  const since = parameters.get('since')?.trim() ?? '';
  if (parameters.has('until')) return CUSTOM;
  if (since === '' || TIME_AGO.test(since)) return since;
  return CUSTOM;
}

/** Why a search was not answered, and what to do. (A 401 goes back to the sign-in form instead.) */
function searchRefusal(error: ApiError): string {
  switch (error.code) {
    case 'invalid_query':
      return `The gateway refused the search: ${error.message}. Change the filter and search again.`;
    case 'unreachable':
      return 'The gateway did not answer (the network or the gateway is down): nothing was searched. Search again when it is back.';
    case 'not_found':
      return `This gateway does not answer the executions search: ${error.message}.`;
    default:
      return `The search failed (HTTP ${error.status}): ${error.message}. Search again in a few seconds.`;
  }
}

/** `index 12 events behind`: said only when the index has not folded the journal's latest events. */
function Lag({ index }: { readonly index: ExecutionsIndexLag | undefined }) {
  if (index === undefined || index.behind <= 0) return null;
  return (
    <p class="notice lag">
      index {index.behind} event{index.behind === 1 ? '' : 's'} behind{' '}
      <span class="muted">(the newest calls and changes may be missing or show an older state; search again to see them)</span>
    </p>
  );
}

/** One execution: its state, tool, agent, class, when it was accepted, its attempts and where it went. */
function ExecutionItem({ row }: { readonly row: ExecutionRowView }) {
  return (
    <li class="card execution">
      <div class="execution-title">
        <span class="state" data-state={row.state}>
          {row.state}
        </span>{' '}
        <strong>{row.tool}</strong> <a href={`#/incident/${encodeURIComponent(row.executionId)}`}>{row.executionId}</a>
      </div>
      <dl class="facts">
        <div>
          <dt>agent</dt>
          <dd>{row.actor}</dd>
        </div>
        <div>
          <dt>class</dt>
          <dd>{row.operationClass}</dd>
        </div>
        <div>
          <dt>accepted</dt>
          <dd>
            <Time at={row.acceptedAt} />
          </dd>
        </div>
        <div>
          <dt>attempts</dt>
          <dd>{row.attempts}</dd>
        </div>
        <div>
          <dt>channel/host</dt>
          <dd>
            {row.channel}/{row.targetHost}
          </dd>
        </div>
        {row.runId !== null && (
          <div>
            <dt>run</dt>
            <dd>{row.runId}</dd>
          </div>
        )}
      </dl>
    </li>
  );
}

/**
 * The executions search: every execution the index holds, newest first, filtered by tool, agent, class, state, run,
 * time window, channel and target host. The filters live in the URL (`#/executions?class=irreversible&since=1h`), so a
 * search can be linked and reloaded; the URL's parameters go to the gateway as they are, which refuses what it cannot
 * read with its reason.
 */
export function ExecutionsPage({ query, onSignedOut }: { readonly query: string; readonly onSignedOut: () => void }) {
  const [found, setFound] = useState<readonly ExecutionRowView[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [index, setIndex] = useState<ExecutionsIndexLag | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // A search from the first page is under way: what the page shows answered the previous one.
  const [searching, setSearching] = useState(true);
  // Only the latest request's answer is shown: an earlier search answering late must not replace a newer one's rows.
  const latest = useRef(0);

  const search = useCallback(
    async (asked: string, cursor?: string) => {
      const request = ++latest.current;
      setBusy(true);
      if (cursor === undefined) setSearching(true);
      const parameters = new URLSearchParams(asked);
      if (cursor !== undefined) parameters.set('cursor', cursor);
      const result = await api.executions(parameters);
      if (request !== latest.current) return;
      setBusy(false);
      setSearching(false);
      if (!result.ok) {
        if (result.error.status === 401) return onSignedOut();
        setError(searchRefusal(result.error));
        // A refused search shows no rows: the ones on the page answered other filters. Older pages keep theirs.
        if (cursor === undefined) {
          setFound(undefined);
          setNextCursor(null);
          setIndex(undefined);
        }
        return;
      }
      setError(null);
      setFound((shown) => [...(cursor === undefined ? [] : (shown ?? [])), ...result.value.executions]);
      setNextCursor(result.value.nextCursor);
      setIndex(result.value.index);
    },
    [onSignedOut],
  );

  // The page is mounted again for each search in the address (main.tsx keys it by the query): this runs once.
  useEffect(() => {
    void search(query);
  }, [query, search]);

  const parameters = new URLSearchParams(query);
  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = (name: string) => ((form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement | null)?.value ?? '').trim();
    const asked = new URLSearchParams();
    for (const filter of TEXT_FILTERS) if (field(filter.name) !== '') asked.set(filter.name, field(filter.name));
    if (field('class') !== '') asked.set('class', field('class'));
    const states = [...form.querySelectorAll<HTMLInputElement>('input[name="state"]:checked')].map((box) => box.value);
    if (states.length > 0) asked.set('state', states.join(','));
    const span = field('window');
    if (span === CUSTOM) {
      if (instantOf(field('since')) !== '') asked.set('since', instantOf(field('since')));
      if (instantOf(field('until')) !== '') asked.set('until', instantOf(field('until')));
    } else if (span !== '') asked.set('since', span);
    // The page size is not a field; a link that sets it keeps it.
    const limit = parameters.get('limit');
    if (limit !== null) asked.set('limit', limit);
    const text = asked.toString();
    // The same search again (to see newer calls) leaves the URL as it is, so no hash change would run it.
    if (text === query) void search(text);
    else location.hash = `#/executions${text === '' ? '' : `?${text}`}`;
  };

  return (
    <section aria-labelledby="executions-title">
      <h1 id="executions-title">Executions</h1>
      <SearchForm parameters={parameters} busy={busy} onSubmit={submit} />
      {error !== null && (
        <p role="alert" class="refused">
          {error}
        </p>
      )}
      <Lag index={index} />
      {searching && <p>Searching…</p>}
      {found !== undefined && !searching && (
        <p class="muted" role="status">
          {found.length === 0 ? 'No execution matches' : `${found.length} execution${found.length === 1 ? '' : 's'}, newest first`}
          {nextCursor !== null ? '; older ones match too' : ''}.
        </p>
      )}
      {found !== undefined && found.length > 0 && (
        <ol class="executions" aria-label="Executions found">
          {found.map((row) => (
            <ExecutionItem key={row.executionId} row={row} />
          ))}
        </ol>
      )}
      {nextCursor !== null && (
        <button type="button" disabled={busy} onClick={() => void search(query, nextCursor)}>
          Load older
        </button>
      )}
    </section>
  );
}

/** The filters, filled from the URL's parameters; a value the form does not offer is offered too, so nothing asked is hidden. */
function SearchForm({ parameters, busy, onSubmit }: { readonly parameters: URLSearchParams; readonly busy: boolean; readonly onSubmit: (event: Event) => void }) {
  const asked = windowOf(parameters);
  const classes = valuesOf(parameters, 'class');
  // Both selects are controlled: a select has no default value of its own to fill from the URL.
  const [span, setSpan] = useState(asked);
  const [operationClass, setOperationClass] = useState(classes.join(','));
  const states = valuesOf(parameters, 'state');
  const windows = asked === CUSTOM || WINDOWS.some((offered) => offered.since === asked) ? WINDOWS : [...WINDOWS, { since: asked, label: `last ${asked}` }];
  const classChoices = [...OPERATION_CLASSES, ...classes.filter((name) => !(OPERATION_CLASSES as readonly string[]).includes(name))];
  const stateChoices = [...EXECUTION_STATES, ...states.filter((name) => !(EXECUTION_STATES as readonly string[]).includes(name))];
  return (
    <form class="search" role="search" aria-label="Search the executions" onSubmit={onSubmit}>
      {TEXT_FILTERS.map((filter) => (
        <label key={filter.name}>
          {filter.label}{' '}
          <input name={filter.name} placeholder={filter.example} defaultValue={valuesOf(parameters, filter.name).join(', ')} autocomplete="off" spellcheck={false} />
        </label>
      ))}
      <label>
        Class{' '}
        <select name="class" value={operationClass} onChange={(event) => setOperationClass((event.currentTarget as HTMLSelectElement).value)}>
          <option value="">any class</option>
          {classes.length > 1 && <option value={classes.join(',')}>{classes.join(', ')}</option>}
          {classChoices.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Accepted in{' '}
        <select name="window" value={span} onChange={(event) => setSpan((event.currentTarget as HTMLSelectElement).value)}>
          {windows.map((offered) => (
            <option key={offered.since} value={offered.since}>
              {offered.label}
            </option>
          ))}
          <option value={CUSTOM}>custom: since – until</option>
        </select>
      </label>
      {span === CUSTOM && (
        <>
          <label>
            Since (local time) <input name="since" type="datetime-local" step={1} defaultValue={localInputOf(parameters.get('since'))} />
          </label>
          <label>
            Until (local time) <input name="until" type="datetime-local" step={1} defaultValue={localInputOf(parameters.get('until'))} />
          </label>
        </>
      )}
      <fieldset class="states">
        <legend>State (any of those checked; none checked: every state)</legend>
        {stateChoices.map((name) => (
          <label key={name} class="choice">
            <input type="checkbox" name="state" value={name} defaultChecked={states.includes(name)} /> {name}
          </label>
        ))}
      </fieldset>
      <div class="actions">
        <button type="submit" disabled={busy}>
          Search
        </button>
      </div>
    </form>
  );
}
