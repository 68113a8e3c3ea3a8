/**
 * The console's session endpoints (src/api/console.ts). The key goes to the server once, at
 * sign-in; what comes back is an HttpOnly cookie (unreadable here) and the CSRF token,
 * kept in memory only.
 */
export interface Session {
  csrf_token: string;
  expires_at: string;
}

/** The message of the server's error envelope (`{ success: false, error: { code, message } }`, src/api/http.ts). */
async function errorMessage(res: Response): Promise<string> {
  const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
  return body?.error?.message ?? `the server answered ${res.status}`;
}

/** The live session, or null when signed out (or expired). */
export async function currentSession(): Promise<Session | null> {
  const res = await fetch("/console/session", { credentials: "same-origin" });
  if (res.status === 401) return null;
  if (!res.ok) throw new Error(await errorMessage(res));
  return (await res.json()) as Session;
}

export async function signIn(key: string): Promise<Session> {
  const res = await fetch("/console/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ key }),
  });
  if (!res.ok) throw new Error(await errorMessage(res));
  return (await res.json()) as Session;
}

export async function signOut(session: Session): Promise<void> {
  const res = await fetch("/console/session", { method: "DELETE", credentials: "same-origin", headers: { "X-CSRF-Token": session.csrf_token } });
  if (!res.ok && res.status !== 401) throw new Error(await errorMessage(res));
}
