// Keys: create (shown once, works over REST), revoke (confirmed; ends the key and its
// console sessions) (docs/console.md "Keys").
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import {
  assertAccessible,
  assertOwnHostOnly,
  consoleNav,
  goTo,
  keyField,
  openConsole,
  signedInConsole,
  signIn,
  UI_MS,
  waitFor,
  waitForText,
} from "./support";

const row = (page: Page, name: string) => page.getByRole("row", { name, exact: true });
/** A key's cell under a column, by the column's header: the row has a time in "Created", "Last used" and "Revoked". */
async function cell(page: Page, name: string, column: string) {
  const headers = await page.getByRole("columnheader").allTextContents();
  const at = headers.indexOf(column);
  assert.ok(at >= 0, `the table has a "${column}" column (it has ${headers.join(", ")})`);
  return row(page, name).locator("th, td").nth(at);
}
const KEY = /\btw_[A-Za-z0-9_-]{24,}/;

describe("keys", () => {
  const app = signedInConsole({ page: "Keys" });
  let created = "";

  test("Create key shows the new key once, with a note; it works over REST and is listed", async () => {
    const { page } = app.tab;
    await page.getByRole("textbox", { name: "Name", exact: true }).fill("support-desk");
    await page.getByRole("button", { name: "Create key", exact: true }).click();
    const shown = page.getByRole("status").filter({ hasText: KEY });
    created = KEY.exec(await waitForText(shown, KEY))![0];
    await page.getByText(/not shown again/).waitFor({ timeout: UI_MS });
    assert.equal((await app.server.fetch("/api/messages/poll", {}, created)).status, 200);
    const listed = row(page, "support-desk");
    await waitForText(listed, /Active/);
    assert.ok(((await listed.textContent()) ?? "").includes(created.slice(0, 10)), "the row shows the key's prefix");
    assert.ok(!((await listed.textContent()) ?? "").includes(created), "the row does not show the whole key");
    await assertAccessible(page, "the Keys page with a new key");
  });

  test("the key is not shown again: not after leaving the page, not after a reload", async () => {
    const { page } = app.tab;
    await goTo(page, "Conversations");
    await goTo(page, "Keys");
    await row(page, "support-desk").waitFor({ timeout: UI_MS });
    assert.ok(!((await page.content()).includes(created)));
    await page.reload();
    await row(page, "support-desk").waitFor({ timeout: UI_MS });
    assert.ok(!((await page.content()).includes(created)));
  });

  test("a name in use is refused with the server's message", async () => {
    const { page } = app.tab;
    await page.getByRole("textbox", { name: "Name", exact: true }).fill("support-desk");
    await page.getByRole("button", { name: "Create key", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: /name/ }).waitFor({ timeout: UI_MS });
  });

  test("Revoke asks first; Cancel keeps the key", async () => {
    const { page } = app.tab;
    await row(page, "support-desk").getByRole("button", { name: "Revoke", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: /Revoke key support-desk/ });
    await dialog.waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the revoke dialog");
    await dialog.getByRole("button", { name: "Cancel", exact: true }).click();
    await waitFor("the dialog to close", async () => (await page.getByRole("dialog").count()) === 0);
    assert.equal((await app.server.fetch("/api/messages/poll", {}, created)).status, 200);
  });

  test("Revoke, confirmed, ends the key over REST and the sessions signed in with it", async () => {
    const { page } = app.tab;
    // A second operator signed in with the new key, in a browser context of its own.
    const other = await openConsole(app.browser, app.server);
    try {
      await signIn(other.page, created);
      await row(page, "support-desk").getByRole("button", { name: "Revoke", exact: true }).click();
      await page.getByRole("dialog", { name: /Revoke key support-desk/ }).getByRole("button", { name: "Revoke key", exact: true }).click();
      await waitFor("the dialog to close", async () => (await page.getByRole("dialog").count()) === 0);
      const revoked = await cell(page, "support-desk", "Revoked");
      await waitFor("the row to show it revoked", async () => (await revoked.locator("time").count()) === 1);
      assert.equal(await (await cell(page, "support-desk", "Last used")).locator("time").count(), 1, "the key was used over REST");
      assert.equal(await row(page, "support-desk").getByRole("button", { name: "Revoke", exact: true }).count(), 0);
      assert.ok(!((await row(page, "support-desk").textContent()) ?? "").includes("Active"));
      assert.equal((await app.server.fetch("/api/messages/poll", {}, created)).status, 401);
      // Its next call gets 401: back to the sign-in form.
      await consoleNav(other.page).getByRole("link", { name: "Workflows", exact: true }).click();
      await keyField(other.page).waitFor({ timeout: UI_MS });
      assert.deepEqual(other.foreignRequests(), []);
    } finally {
      await other.context.close();
    }
  });

  test("a key without keys:manage has no Keys page: no link, and /console/keys opens Conversations", async () => {
    const { key } = await app.server.api<{ key: string }>("POST", "/api/keys", { name: "reader", scopes: ["messages:read"] });
    const other = await openConsole(app.browser, app.server);
    try {
      await signIn(other.page, key);
      await other.page.goto("/console/keys");
      await other.page.getByRole("heading", { level: 1, name: "Conversations", exact: true }).waitFor({ timeout: UI_MS });
      assert.equal(new URL(other.page.url()).pathname, "/console/conversations");
      assert.equal(await consoleNav(other.page).getByRole("link", { name: "Keys", exact: true }).count(), 0);
      assert.deepEqual(other.foreignRequests(), []);
      assert.deepEqual(other.problems, []);
    } finally {
      await other.context.close();
    }
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
