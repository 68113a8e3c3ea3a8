// The console on PostgreSQL: sign-in, send, a live inbound message and sign-out against a
// server on a database of its own. Run by test/browser/run.ts only with TEST_DATABASE_URL.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertAccessible,
  assertOwnHostOnly,
  LIVE_MS,
  newPhone,
  SESSION_COOKIE,
  sessionCookie,
  signedInConsole,
  signIn,
  signInWithWrongKey,
  signOut,
  threadList as thread,
  UI_MS,
  waitFor,
} from "./support";

describe("the console on PostgreSQL", () => {
  const phone = newPhone();
  const app = signedInConsole({ dialect: "postgres", signIn: false, seed: (server) => server.inbound(phone, "Do you deliver on Sundays?") });

  test("a wrong key is refused; the right key signs in with the session cookie", async () => {
    const { page, context } = app.tab;
    await signInWithWrongKey(page);
    await signIn(page, app.server.key);
    const cookie = await sessionCookie(context);
    assert.equal(cookie?.httpOnly, true);
    assert.equal(cookie?.sameSite, "Strict");
  });

  test("a thread sends: the message appears, and REST history has it", async () => {
    const { page } = app.tab;
    await page.getByRole("link", { name: new RegExp(`\\${phone}`) }).click();
    await thread(page, phone).getByText("Do you deliver on Sundays?").waitFor({ timeout: UI_MS });
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("Yes, until noon.");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await thread(page, phone).getByText("Yes, until noon.").waitFor({ timeout: UI_MS });
    const [newest] = await app.server.history(phone);
    assert.deepEqual([newest?.direction, newest?.message, newest?.status], ["outbound", "Yes, until noon.", "delivered"]);
    await assertAccessible(page, "a thread on PostgreSQL");
  });

  test("an inbound message appears within 5 s, without reload", async () => {
    const { page } = app.tab;
    await app.server.inbound(phone, "Great, see you Sunday.");
    await thread(page, phone).getByText("Great, see you Sunday.").waitFor({ timeout: LIVE_MS });
  });

  test("Sign out ends the session on the server", async () => {
    const { page, context } = app.tab;
    const cookie = await sessionCookie(context);
    assert.ok(cookie);
    await signOut(page);
    await waitFor("the old cookie to be refused", async () => (await app.server.fetch("/console/session", { headers: { cookie: `${SESSION_COOKIE}=${cookie.value}` } }, null)).status === 401);
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
