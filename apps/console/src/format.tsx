import { useEffect, useState } from 'preact/hooks';

/** Renders JSON (recorded arguments, correlations) wrapped to the page's width. */
export function Json({ value }: { readonly value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** `expires in 12:04`, counting down each second; `expired` past the deadline. */
export function Countdown({ until }: { readonly until: string | null }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  if (until === null) return <span>no deadline</span>;
  const left = Math.floor((Date.parse(until) - now) / 1000);
  if (left <= 0) return <time dateTime={until}>expired at {until}</time>;
  const hours = Math.floor(left / 3600);
  const minutes = Math.floor((left % 3600) / 60);
  const seconds = String(left % 60).padStart(2, '0');
  const text = hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
  return (
    <time dateTime={until} class={left < 60 ? 'urgent' : undefined}>
      expires in {text} <span class="muted">({until})</span>
    </time>
  );
}

/** One `<dt>`/`<dd>` row. */
export function Row({ label, children }: { readonly label: string; readonly children: preact.ComponentChildren }) {
  return (
    <div class="row">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** What a refused or accepted decision says, announced to screen readers. */
export function Outcome({ outcome }: { readonly outcome: { readonly ok: boolean; readonly message: string } | undefined }) {
  if (outcome === undefined) return null;
  return (
    <p role={outcome.ok ? 'status' : 'alert'} class={outcome.ok ? 'decided' : 'refused'}>
      {outcome.message}
    </p>
  );
}
