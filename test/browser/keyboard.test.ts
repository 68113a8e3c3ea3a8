// Keyboard only: every control is reached with Tab, shows where the focus is, and works
// with Enter, Space and Escape (docs/console.md "Keyboard").
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertOwnHostOnly, consoleNav, ECHO_WORKFLOW, isFocused, keyField, newPhone, signedInConsole, tabTo, threadList, UI_MS, waitFor, waitForText } from "./support";

describe("keyboard", () => {
  const phone = newPhone();
  // The operator answers `phone` from the console, which takes that chat over (docs/supervision.md):
  // the echo workflow then passes over it and answers `other` alone.
  const other = newPhone();
  const app = signedInConsole({
    signIn: false,
    seed: async (server) => {
      await server.inbound(phone, "Can I book for Friday?");
      await server.inbound(other, "Are you open on Sunday?");
    },
  });

  test("sign in: the key field, typing, Enter", async () => {
    const { page } = app.tab;
    await tabTo(page, keyField(page), "the API key field");
    await page.keyboard.type(app.server.key);
    await page.keyboard.press("Enter");
    await consoleNav(page).waitFor({ timeout: UI_MS });
  });

  test("Tab reaches the navigation, Sign out, New message, New group and the search, in that order", async () => {
    const { page } = app.tab;
    const nav = consoleNav(page);
    const order = [
      nav.getByRole("link", { name: "Conversations", exact: true }),
      nav.getByRole("link", { name: "Drafts", exact: true }),
      nav.getByRole("link", { name: "Workflows", exact: true }),
      nav.getByRole("link", { name: "Lines", exact: true }),
      nav.getByRole("link", { name: "Webhooks", exact: true }),
      nav.getByRole("link", { name: "Keys", exact: true }),
      nav.getByRole("button", { name: "Sign out", exact: true }),
      page.getByRole("button", { name: "New message", exact: true }),
      page.getByRole("button", { name: "New group", exact: true }),
      page.getByRole("searchbox", { name: "Search by number" }),
    ];
    // A fresh document: Tab starts from its top.
    await page.reload();
    await order[0]!.waitFor({ timeout: UI_MS });
    for (const [i, target] of order.entries()) {
      await page.keyboard.press("Tab");
      assert.ok(await isFocused(target), `Tab ${i + 1} reaches ${target}`);
    }
  });

  test("New message: Enter opens the dialog with the focus on Phone; Escape closes it", async () => {
    const { page } = app.tab;
    await tabTo(page, page.getByRole("button", { name: "New message", exact: true }), "New message");
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "New message" });
    await dialog.waitFor({ timeout: UI_MS });
    await waitFor("the focus on Phone", () => isFocused(dialog.getByRole("textbox", { name: "Phone", exact: true })));
    await page.keyboard.press("Escape");
    await waitFor("the dialog to close", async () => (await page.getByRole("dialog").count()) === 0);
  });

  test("a thread: Enter on its link opens it; Tab to Message, type, Enter sends", async () => {
    const { page } = app.tab;
    await tabTo(page, page.getByRole("link", { name: new RegExp(`\\${phone}`) }), "the conversation's link");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 2, name: phone, exact: true }).waitFor({ timeout: UI_MS });
    await tabTo(page, page.getByRole("textbox", { name: "Message", exact: true }), "the Message field");
    await page.keyboard.type("Yes, Friday at 8 works.");
    await page.keyboard.press("Enter");
    await waitFor("the message sent", async () => (await app.server.history(phone))[0]?.message === "Yes, Friday at 8 works.");
    await threadList(page, phone).getByText("Yes, Friday at 8 works.").waitFor({ timeout: UI_MS });
  });

  test("Workflows: Tab to Run now, Enter runs it", async () => {
    const { page } = app.tab;
    await tabTo(page, consoleNav(page).getByRole("link", { name: "Workflows", exact: true }), "the Workflows link");
    await page.keyboard.press("Enter");
    const runNow = page.getByRole("row", { name: ECHO_WORKFLOW, exact: true }).getByRole("button", { name: "Run now", exact: true });
    await tabTo(page, runNow, "Run now");
    await page.keyboard.press("Enter");
    await waitForText(page.getByRole("status").filter({ hasText: /run of/i }), /Run of echo: ok, 1 handled/);
  });

  test("Keys: Tab to Name, type, Enter creates the key; Space on Revoke opens the dialog, Escape closes it", async () => {
    const { page } = app.tab;
    await tabTo(page, consoleNav(page).getByRole("link", { name: "Keys", exact: true }), "the Keys link");
    await page.keyboard.press("Enter");
    await tabTo(page, page.getByRole("textbox", { name: "Name", exact: true }), "the Name field");
    await page.keyboard.type("front-desk");
    await page.keyboard.press("Enter");
    const row = page.getByRole("row", { name: "front-desk", exact: true });
    await tabTo(page, row.getByRole("button", { name: "Revoke", exact: true }), "Revoke");
    await page.keyboard.press("Space");
    await page.getByRole("dialog", { name: /Revoke key front-desk/ }).waitFor({ timeout: UI_MS });
    await page.keyboard.press("Escape");
    await waitFor("the dialog to close", async () => (await page.getByRole("dialog").count()) === 0);
    assert.equal(await row.getByRole("button", { name: "Revoke", exact: true }).count(), 1, "Escape revoked nothing");
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
