import { useState } from 'preact/hooks';
import type { SessionAnswer as Session } from '@oncegate/console-api';
import { api } from './api';

/**
 * The approver token is sent once, to be exchanged for an HttpOnly session cookie; it is never kept in the page
 * (no storage, the field is emptied), so a script on the page could not read it back.
 */
export function SignIn({ onSignedIn, notice }: { readonly onSignedIn: (session: Session) => void; readonly notice: string | null }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const field = form.elements.namedItem('token') as HTMLInputElement;
    const token = field.value;
    field.value = '';
    setBusy(true);
    const result = await api.signIn(token);
    setBusy(false);
    if (result.ok) onSignedIn(result.value);
    else setError(result.error.message);
  };
  return (
    <main class="sign-in">
      <h1>Oncegate console</h1>
      {notice !== null && error === null && (
        <p role="status" class="notice">
          {notice}
        </p>
      )}
      <p>Sign in with your approver token (issued by <code>oncegate approvers add &lt;name&gt;</code>).</p>
      <form onSubmit={(event) => void submit(event)}>
        <label for="token">Approver token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck={false} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error !== null && (
          <p role="alert" class="refused">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}
