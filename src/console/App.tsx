import { QueryClientProvider } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useState } from "react";
import { Link, Redirect, Route, Router, Switch, useRoute } from "wouter";
import { ErrorAlert } from "./components/error-alert";
import { useLiveUpdates } from "./live";
import { ConversationsPage } from "./pages/conversations";
import { DraftsPage } from "./pages/drafts";
import { KeysPage } from "./pages/keys";
import { LinesPage } from "./pages/lines";
import { WebhooksPage } from "./pages/webhooks";
import { WorkflowsPage } from "./pages/workflows";
import { SignIn } from "./sign-in";
import { currentSession, signOut, type Session } from "./session";
import { useMay, useScopesKnown } from "./use-scopes";
import { createConsoleClient, createQueryClient, TRPCProvider } from "./trpc";

/** The pages, each shown only to a session whose key holds its scope. */
const PAGES = [
  { path: "/conversations", label: "Conversations", scope: "messages:read" },
  { path: "/drafts", label: "Drafts", scope: "drafts:approve" },
  { path: "/workflows", label: "Workflows", scope: "workflows:manage" },
  { path: "/lines", label: "Lines", scope: "lines:manage" },
  { path: "/webhooks", label: "Webhooks", scope: "webhooks:manage" },
  { path: "/keys", label: "Keys", scope: "keys:manage" },
] as const;

/** The active page's link, marked for assistive technology and named in the window's title. */
function NavLink({ path, label }: { path: string; label: string }) {
  const [active] = useRoute(`${path}/*?`);
  useEffect(() => {
    if (active) document.title = `${label} · Textwire console`;
  }, [active, label]);
  return (
    <li>
      <Link href={path} aria-current={active ? "page" : undefined}>
        {label}
      </Link>
    </li>
  );
}

/** Navigation, "Sign out", live updates and the pages (inside the tRPC providers). */
function Shell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const liveError = useLiveUpdates();
  const may = useMay();
  const scopes = useScopesKnown();
  const [signOutError, setSignOutError] = useState<unknown>(null);
  const leave = async () => {
    try {
      await signOut(session);
      onSignOut();
    } catch (error) {
      setSignOutError(error);
    }
  };
  return (
    <>
      <header className="container">
        <nav aria-label="Console">
          <ul>
            <li>
              <strong>Textwire</strong>
            </li>
          </ul>
          <ul>
            {PAGES.filter((page) => may(page.scope)).map((page) => (
              <NavLink key={page.path} path={page.path} label={page.label} />
            ))}
            <li>
              <button type="button" className="secondary" onClick={leave}>
                Sign out
              </button>
            </li>
          </ul>
        </nav>
        <ErrorAlert error={signOutError} />
        <ErrorAlert error={liveError} context="Live updates paused" />
      </header>
      {scopes.known ? (
        <Pages may={may} />
      ) : (
        // The routes wait for the key's scopes: until then every scoped page would redirect.
        <main className="container" aria-busy={scopes.error ? undefined : "true"}>
          <ErrorAlert error={scopes.error} />
        </main>
      )}
    </>
  );
}

/** The pages the key's scopes open; any other path goes to the conversations. */
function Pages({ may }: { may: ReturnType<typeof useMay> }) {
  return (
    <main className="container">
      <Switch>
        <Route path="/conversations/group/:chat" component={ConversationsPage} />
        <Route path="/conversations/:phone?" component={ConversationsPage} />
        {may("drafts:approve") && <Route path="/drafts" component={DraftsPage} />}
        {may("workflows:manage") && <Route path="/workflows" component={WorkflowsPage} />}
        {may("lines:manage") && <Route path="/lines" component={LinesPage} />}
        {may("webhooks:manage") && <Route path="/webhooks" component={WebhooksPage} />}
        {may("keys:manage") && <Route path="/keys" component={KeysPage} />}
        <Route>
          <Redirect to="/conversations" replace />
        </Route>
      </Switch>
    </main>
  );
}

/** The signed-in console: one query cache and one tRPC client bound to the session, both dropped with it. */
function Console({ session, onSessionEnded, onSignOut }: { session: Session; onSessionEnded: () => void; onSignOut: () => void }) {
  const queryClient = useMemo(() => createQueryClient(onSessionEnded), [onSessionEnded]);
  const trpcClient = useMemo(() => createConsoleClient(session.csrf_token), [session.csrf_token]);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <Shell session={session} onSignOut={onSignOut} />
      </TRPCProvider>
    </QueryClientProvider>
  );
}

/** Asks the server whether a session is live (the cookie is HttpOnly), then shows sign-in or the console. */
export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  // Set when the server ended the session (a 401), so sign-in can say why it is back.
  const [ended, setEnded] = useState(false);
  useEffect(() => {
    currentSession().then(setSession, () => setSession(null));
  }, []);
  const sessionEnded = useCallback(() => {
    setEnded(true);
    setSession(null);
  }, []);
  const signedIn = useCallback((next: Session) => {
    setEnded(false);
    setSession(next);
  }, []);
  if (session === undefined) return <main className="container" aria-busy="true" />;
  return (
    <Router base="/console">
      {session ? (
        <Console session={session} onSessionEnded={sessionEnded} onSignOut={() => setSession(null)} />
      ) : (
        <SignIn onSignedIn={signedIn} sessionEnded={ended} />
      )}
    </Router>
  );
}
