import { render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { SessionAnswer as Session } from '@oncegate/console-api';
import { api, remember } from './api';
import { ApprovalsPage } from './approvals-page';
import { IncidentPage } from './incident-page';
import { ReviewsPage } from './reviews-page';
import { SignIn } from './sign-in';
import './console.css';

type Route = { readonly page: 'approvals' } | { readonly page: 'reviews' } | { readonly page: 'incident'; readonly executionId: string };

function routeOf(hash: string): Route {
  const [page, id] = hash.replace(/^#\/?/, '').split('/');
  if (page === 'reviews') return { page: 'reviews' };
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

function Console() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const route = useRoute();
  useEffect(() => {
    void api.session().then((result) => {
      const found = result.ok ? result.value : null;
      remember(found ?? undefined);
      setSession(found);
    });
  }, []);
  const signedIn = (value: Session) => {
    remember(value);
    setSession(value);
  };
  // One function for the page's lifetime, so the pages' refresh timers are not restarted on every render.
  const signedOut = useCallback(() => {
    remember(undefined);
    setSession(null);
  }, []);
  const signOut = async () => {
    await api.signOut();
    signedOut();
  };
  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={signedIn} />;
  const link = (page: Route['page'], label: string) => (
    <a href={`#/${page}`} aria-current={route.page === page ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <header class="top">
        <span class="brand">Oncegate console</span>
        <nav aria-label="Console">
          {link('approvals', 'Approvals')}
          {link('reviews', 'Review queue')}
          {link('incident', 'Incident view')}
        </nav>
        <span class="who">
          {session.actor}{' '}
          <button type="button" class="quiet" onClick={() => void signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        {route.page === 'approvals' && <ApprovalsPage onSignedOut={signedOut} />}
        {route.page === 'reviews' && <ReviewsPage onSignedOut={signedOut} />}
        {route.page === 'incident' && <IncidentPage executionId={route.executionId} onSignedOut={signedOut} />}
      </main>
    </>
  );
}

render(<Console />, document.getElementById('console')!);
