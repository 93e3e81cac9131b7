import { useCallback, useEffect, useState } from 'preact/hooks';
import type { DecisionEntry } from '@oncegate/console-api';
import { api, type Result } from './api';
import { refusal } from './format';

const REFRESH_MS = 5_000;
/** How long a decided execution stays on its queue's page, with what followed it. */
const RECENT_MS = 30 * 60_000;

export interface PageProps {
  /** The session ended (a 401): back to the sign-in form. */
  readonly onSignedOut: () => void;
  /** A refresh succeeded: the header's "last refreshed" time. */
  readonly onLoaded: () => void;
  /** Something was decided: the navigation's counts are asked again. */
  readonly onChanged: () => void;
}

/** What a queue page shows: the executions waiting, the ones decided here, and the latest decision of each. */
export interface Queue<View, Outcome> {
  /** The executions waiting, `undefined` until the first answer. */
  readonly views: readonly View[] | undefined;
  /** Why the last refresh failed, `null` when it did not. */
  readonly error: string | null;
  /** What this page decided, with the gateway's answer, kept until the page is left. */
  readonly settled: ReadonlyMap<string, { readonly view: View; readonly outcome: Outcome }>;
  /** The newest decision of each execution in the last half hour (here or elsewhere), with what followed it. */
  readonly latest: ReadonlyMap<string, DecisionEntry>;
  readonly refresh: () => Promise<void>;
  /** A decision taken on this page: kept with its answer, and the counts and the queue asked again. */
  readonly onSettled: (view: View, outcome: Outcome) => void;
}

/**
 * A queue of executions waiting on a person (approvals, reviews): asked every 5 s beside the decisions of `decisions`'
 * kinds taken in the last half hour. A refusal of either says so in `error` and keeps what is shown; a 401 signs out.
 * `waiting` must not change between renders (a module-level function).
 */
export function useQueue<View extends { readonly executionId: string }, Outcome>(
  waiting: () => Promise<Result<readonly View[]>>,
  decisions: string,
  { onSignedOut, onLoaded, onChanged }: PageProps,
): Queue<View, Outcome> {
  const [views, setViews] = useState<readonly View[] | undefined>(undefined);
  const [recent, setRecent] = useState<readonly DecisionEntry[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [settled, setSettled] = useState<ReadonlyMap<string, { view: View; outcome: Outcome }>>(new Map());

  const refresh = useCallback(async () => {
    const [queued, history] = await Promise.all([
      waiting(),
      api.decisions({ decision: decisions, from: new Date(Date.now() - RECENT_MS).toISOString(), limit: 50 }),
    ]);
    if (!queued.ok || !history.ok) {
      const failed = !queued.ok ? queued.error : !history.ok ? history.error : undefined;
      if (failed?.status === 401) onSignedOut();
      else if (failed !== undefined) setError(`The page could not refresh: ${refusal(failed)}`);
      return;
    }
    setViews(queued.value);
    setRecent(history.value.decisions);
    setError(null);
    onLoaded();
  }, [waiting, decisions, onSignedOut, onLoaded]);

  useEffect(() => {
    void refresh();
    const timer = setInterval(() => void refresh(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [refresh]);

  const onSettled = (view: View, outcome: Outcome) => {
    setSettled((before) => new Map(before).set(view.executionId, { view, outcome }));
    onChanged();
    void refresh();
  };
  // The history is newest first.
  const latest = new Map<string, DecisionEntry>();
  for (const entry of recent) if (!latest.has(entry.executionId)) latest.set(entry.executionId, entry);
  return { views, error, settled, latest, refresh, onSettled };
}
