import { useEffect, useId, useState, type FormEvent } from "react";
import { ErrorAlert } from "./components/error-alert";
import { signIn, type Session } from "./session";

/** The key is posted once and forgotten: only the server's session remains (an HttpOnly cookie). */
export function SignIn({ onSignedIn, sessionEnded }: { onSignedIn: (session: Session) => void; sessionEnded: boolean }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const errorId = useId();
  useEffect(() => {
    document.title = "Sign in · Textwire console";
  }, []);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const key = new FormData(form).get("key");
    setBusy(true);
    try {
      const session = await signIn(typeof key === "string" ? key : "");
      form.reset();
      onSignedIn(session);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <main className="container sign-in">
      <article>
        <header>
          <h1>Sign in to Textwire</h1>
          {sessionEnded && !error && <p>Your session ended. Sign in again to go on.</p>}
        </header>
        <form onSubmit={submit}>
          <label>
            API key
            <input
              name="key"
              type="password"
              autoComplete="off"
              required
              autoFocus
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? errorId : undefined}
            />
          </label>
          <div id={errorId}>
            <ErrorAlert error={error} />
          </div>
          <button type="submit" aria-busy={busy}>
            Sign in
          </button>
        </form>
      </article>
    </main>
  );
}
