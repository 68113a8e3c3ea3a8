// Sign-in, the session cookie, what the browser keeps, sign-out (docs/console.md "Sessions").
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertAccessible,
  assertOwnHostOnly,
  consoleNav,
  keyField,
  SESSION_COOKIE,
  sessionCookie,
  signedInConsole,
  signIn,
  signInWithWrongKey,
  signOut,
  UI_MS,
  waitFor,
} from "./support";

describe("sign-in", () => {
  const app = signedInConsole({ signIn: false });

  test("the sign-in form has no serious or critical axe-core violations", async () => {
    await keyField(app.tab.page).waitFor({ timeout: UI_MS });
    assert.equal(await keyField(app.tab.page).getAttribute("type"), "password");
    assert.equal(await keyField(app.tab.page).getAttribute("autocomplete"), "off");
    await assertAccessible(app.tab.page, "the sign-in form");
  });

  test("a wrong key shows an alert saying so, and sets no cookie", async () => {
    const { page } = app.tab;
    await signInWithWrongKey(page);
    assert.equal(await sessionCookie(app.tab.context), undefined);
    assert.equal(await consoleNav(page).count(), 0);
  });

  test("the right key signs in: the console's navigation, and Conversations at /console/conversations", async () => {
    const { page } = app.tab;
    await signIn(page, app.server.key);
    for (const name of ["Conversations", "Workflows", "Lines", "Webhooks", "Keys"]) {
      await consoleNav(page).getByRole("link", { name, exact: true }).waitFor({ timeout: UI_MS });
    }
    await page.getByRole("heading", { level: 1, name: "Conversations" }).waitFor({ timeout: UI_MS });
    await waitFor("the URL /console/conversations", () => new URL(page.url()).pathname === "/console/conversations");
    assert.equal(await consoleNav(page).getByRole("link", { name: "Conversations", exact: true }).getAttribute("aria-current"), "page");
    assert.equal(await page.getByRole("alert").filter({ hasText: "not a valid API key" }).count(), 0);
  });

  test("the session cookie is HttpOnly, SameSite=Strict, not Secure over http, and lasts 12 hours", async () => {
    const cookie = await sessionCookie(app.tab.context);
    assert.ok(cookie, `no ${SESSION_COOKIE} cookie`);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, "Strict");
    assert.equal(cookie.secure, false);
    assert.equal(cookie.path, "/");
    const hours = (cookie.expires * 1000 - Date.now()) / 3_600_000;
    assert.ok(hours > 11.9 && hours <= 12.01, `the cookie expires in ${hours.toFixed(3)} h, not 12`);
    assert.ok(!cookie.value.includes(app.server.key), "the cookie holds the key");
  });

  test("the key is nowhere in the browser: no storage, no readable cookie, not in the page", async () => {
    const kept = await app.tab.page.evaluate(async () => ({
      local: Object.keys(localStorage),
      session: Object.keys(sessionStorage),
      indexed: (await indexedDB.databases()).map((d) => d.name ?? ""),
      cookie: document.cookie,
      html: document.documentElement.outerHTML,
    }));
    assert.deepEqual(kept.local, []);
    assert.deepEqual(kept.session, []);
    assert.deepEqual(kept.indexed, []);
    assert.ok(!kept.cookie.includes(SESSION_COOKIE), `document.cookie shows the session: ${kept.cookie}`);
    assert.ok(!kept.cookie.includes(app.server.key));
    assert.ok(!kept.html.includes(app.server.key), "the page still holds the key");
  });

  test("a reload stays signed in (the app asks GET /console/session)", async () => {
    const { page } = app.tab;
    await page.reload();
    await consoleNav(page).waitFor({ timeout: UI_MS });
    assert.equal(await keyField(page).count(), 0);
  });

  test("the session works on its own origin only: tRPC with the cookie answers, a cross-site POST does not", async () => {
    const cookie = await sessionCookie(app.tab.context);
    assert.ok(cookie);
    const headers = { cookie: `${SESSION_COOKIE}=${cookie.value}` };
    assert.equal((await app.server.fetch("/console/session", { headers }, null)).status, 200);
    assert.equal((await app.server.fetch("/trpc/keys.list", { headers }, null)).status, 200);
    // A mutation by cookie from another origin is refused, whatever it carries.
    const crossSite = await app.server.fetch("/trpc/keys.create", { method: "POST", headers: { ...headers, origin: "https://evil.example" }, body: JSON.stringify({ name: "evil" }) }, null);
    assert.equal(crossSite.status, 403);
  });

  test("Sign out returns to the form and ends the session on the server: the old cookie gets 401", async () => {
    const { page, context } = app.tab;
    const before = await sessionCookie(context);
    assert.ok(before);
    await signOut(page);
    const headers = { cookie: `${SESSION_COOKIE}=${before.value}` };
    assert.equal((await app.server.fetch("/console/session", { headers }, null)).status, 401);
    assert.equal((await app.server.fetch("/trpc/keys.list", { headers }, null)).status, 401);
    await page.reload();
    await keyField(page).waitFor({ timeout: UI_MS });
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assert.ok(app.tab.requests.length > 0);
    assertOwnHostOnly(app.tab);
  });
});
