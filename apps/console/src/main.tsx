import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { QueueCountsAnswer, SessionAnswer as Session } from '@oncegate/console-api';
import { api, remember } from './api';
import { ApprovalsPage } from './approvals-page';
import { DecisionsPage } from './decisions-page';
import { ExecutionsPage } from './executions-page';
import { Time } from './format';
import { IncidentPage } from './incident-page';
import { ReviewsPage } from './reviews-page';
import { SignIn } from './sign-in';
import './console.css';

type Route =
  | { readonly page: 'approvals' }
  | { readonly page: 'reviews' }
  | { readonly page: 'decisions' }
  /** `query`: the search's filters as URL parameters (`class=irreversible&since=1h`), so a search can be linked. */
  | { readonly page: 'executions'; readonly query: string }
  | { readonly page: 'incident'; readonly executionId: string };

/** How often the navigation's counts are asked again (the pages refresh their lists as often). */
const COUNTS_REFRESH_MS = 5_000;

const SESSION_ENDED = 'Your session ended (it expired, you signed out elsewhere, or your approver token was revoked). Sign in again; nothing was decided since.';

function routeOf(hash: string): Route {
  const whole = hash.replace(/^#\/?/, '');
  const mark = whole.indexOf('?');
  const [page, id] = (mark < 0 ? whole : whole.slice(0, mark)).split('/');
  if (page === 'reviews') return { page: 'reviews' };
  if (page === 'decisions') return { page: 'decisions' };
  if (page === 'executions') return { page: 'executions', query: mark < 0 ? '' : whole.slice(mark + 1) };
  if (page === 'incident') return { page: 'incident', executionId: decodeURIComponent(id ?? '') };
  return { page: 'approvals' };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash));
  useEffect(() => {
    const changed = () => setRoute(routeOf(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}

/** A count beside a navigation entry, read as `2 waiting`. */
function Waiting({ count }: { readonly count: number | undefined }) {
  if (count === undefined) return null;
  return <span class={count > 0 ? 'count waiting' : 'count'}>{count} waiting</span>;
}

function Console() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [notice, setNotice] = useState<string | null>(null);
  const [counts, setCounts] = useState<QueueCountsAnswer | undefined>(undefined);
  const [refreshedAt, setRefreshedAt] = useState<string | undefined>(undefined);
  const route = useRoute();
  useEffect(() => {
    void api.session().then((result) => {
      // 204: nobody is signed in on this browser.
      const found = result.ok ? (result.value ?? null) : null;
      remember(found ?? undefined);
      setSession(found);
    });
  }, []);
  const signedIn = (value: Session) => {
    remember(value);
    setNotice(null);
    setSession(value);
  };
  // One function for the page's lifetime, so the pages' refresh timers are not restarted on every render.
  const sessionEnded = useCallback(() => {
    remember(undefined);
    setNotice(SESSION_ENDED);
    setSession(null);
  }, []);
  const loaded = useCallback(() => setRefreshedAt(new Date().toISOString()), []);
  const loadCounts = useCallback(async () => {
    const result = await api.counts();
    if (result.ok) {
      setCounts(result.value);
      loaded();
    } else if (result.error.status === 401) sessionEnded();
  }, [loaded, sessionEnded]);
  useEffect(() => {
    if (!session) return undefined;
    void loadCounts();
    const timer = setInterval(() => void loadCounts(), COUNTS_REFRESH_MS);
    return () => clearInterval(timer);
  }, [session, loadCounts]);
  const signOut = async () => {
    await api.signOut();
    remember(undefined);
    setNotice(null);
    setSession(null);
  };
  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={signedIn} notice={notice} />;
  const page = { onSignedOut: sessionEnded, onLoaded: loaded, onChanged: loadCounts };
  const link = (target: Route['page'], label: string, count?: number) => (
    <a href={`#/${target}`} aria-current={route.page === target ? 'page' : undefined}>
      {label} <Waiting count={count} />
    </a>
  );
  return (
    <>
      <header class="top">
        <span class="brand">Oncegate console</span>
        <nav aria-label="Console">
          {link('approvals', 'Approvals', counts?.approvals)}
          {link('reviews', 'Review queue', counts?.reviews)}
          {link('decisions', 'Decisions')}
          {link('executions', 'Executions')}
          {link('incident', 'Incident view')}
        </nav>
        <span class="refreshed" aria-live="off">
          Last refreshed {refreshedAt === undefined ? 'never' : <Time at={refreshedAt} />}
        </span>
        <span class="who">
          {session.actor}{' '}
          <button type="button" class="quiet" onClick={() => void signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        {route.page === 'approvals' && <ApprovalsPage {...page} />}
        {route.page === 'reviews' && <ReviewsPage {...page} />}
        {route.page === 'decisions' && <DecisionsPage onSignedOut={sessionEnded} />}
        {/* Keyed by the search: a link followed or the back button starts afresh, the form filled from the address. */}
        {route.page === 'executions' && <ExecutionsPage key={route.query} query={route.query} onSignedOut={sessionEnded} />}
        {route.page === 'incident' && <IncidentPage executionId={route.executionId} onSignedOut={sessionEnded} />}
      </main>
    </>
  );
}

render(<Console />, document.getElementById('console')!);
