// Lines: the Lines page (add with the network's fields, test, edit, make default, disable,
// delete and its 409), and in the conversations each message's line, the line filter and the
// composer's line choice, shown only once the deployment has several lines (docs/console.md
// "Lines"). Loopback lines only: a twilio line needs PUBLIC_URL, so adding one here shows the 422.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import type { LineRecord as Line } from "../../src/lines/schemas";
import { assertAccessible, assertOwnHostOnly, goTo, itemWith, newPhone, signedInConsole, threadList as thread, UI_MS, waitFor, waitForText } from "./support";


const lineRegion = (page: Page, name: string) => page.getByRole("region", { name, exact: true });
const newLineForm = (page: Page) => page.getByRole("region", { name: "New line", exact: true });
const conversationLinks = (page: Page) => page.getByRole("region", { name: "Conversation list" }).getByRole("link");
const lineFilter = (page: Page) => page.getByRole("region", { name: "Conversation list" }).getByRole("combobox", { name: "Line", exact: true });

async function openThread(page: Page, phone: string): Promise<void> {
  await page.goto(`/console/conversations/${encodeURIComponent(phone)}`);
  await page.getByRole("heading", { level: 2, name: phone, exact: true }).waitFor({ timeout: UI_MS });
  await thread(page, phone).waitFor({ timeout: UI_MS });
}

describe("lines", () => {
  /** Writes in on the environment's line before any other line exists. */
  const first = newPhone();
  /** Gets a message on the sales line from the composer. */
  const second = newPhone();
  const app = signedInConsole({ seed: (server) => server.inbound(first, "Hello, is the shop open?") });
  const lines = async () => (await app.server.api<{ lines: Line[] }>("GET", "/api/lines")).lines;
  const lineNamed = async (name: string) => (await lines()).find((l) => l.name === name);

  test("with one line the conversations look as before: no line labels, no line filter, no line choice", async () => {
    const { page } = app.tab;
    await openThread(page, first);
    await itemWith(thread(page, first), "Hello, is the shop open?", "li").waitFor({ timeout: UI_MS });
    assert.equal(await lineFilter(page).count(), 0);
    assert.equal(await page.getByRole("combobox", { name: "Line", exact: true }).count(), 0);
    assert.doesNotMatch((await thread(page, first).textContent()) ?? "", /Line default/);
  });

  test("the Lines page lists the environment's line, read-only with a note, and has no serious axe-core violations", async () => {
    const { page } = app.tab;
    await goTo(page, "Lines");
    const region = lineRegion(page, "default");
    const text = await waitForText(region, /Network:\s*loopback/);
    assert.match(text, /Default/);
    assert.match(text, /State:\s*Enabled/);
    assert.match(text, /Managed by:\s*the environment/);
    assert.match(text, /comes from the environment/);
    assert.match(text, /Webhook URL:\s*none/);
    for (const name of ["Edit", "Delete", "Disable", "Make default"])
      assert.equal(await region.getByRole("button", { name, exact: true }).count(), 0, `no ${name} on the environment's line`);
    await region.getByRole("button", { name: "Test", exact: true }).click();
    await waitForText(region.getByRole("status"), /Test passed: loopback/);
    await assertAccessible(page, "the Lines page");
  });

  test("the add form follows the network: twilio's fields, credentials as password fields; the API's 400 and 422 are shown", async () => {
    const { page } = app.tab;
    const form = newLineForm(page);
    assert.equal(await form.getByLabel("Account SID", { exact: true }).count(), 0);
    await form.getByRole("combobox", { name: "Network", exact: true }).selectOption("twilio");
    await form.getByRole("textbox", { name: "Account SID", exact: true }).waitFor({ timeout: UI_MS });
    assert.equal(await form.getByLabel("Auth token", { exact: true }).getAttribute("type"), "password");
    await form.getByRole("textbox", { name: "API URL", exact: true }).waitFor();
    await form.getByRole("spinbutton", { name: "Send timeout (ms)", exact: true }).waitFor();
    await form.getByRole("textbox", { name: "Name", exact: true }).fill("sms");
    await form.getByRole("textbox", { name: "Address", exact: true }).fill("+14155550100");
    await form.getByRole("textbox", { name: "Account SID", exact: true }).fill("AC-not-a-sid");
    await form.getByLabel("Auth token", { exact: true }).fill("a-token");
    await form.getByRole("button", { name: "Add line", exact: true }).click();
    await waitForText(form.getByRole("alert"), /settings\.account_sid: must be AC followed by 32 hex digits/);
    await form.getByRole("textbox", { name: "Account SID", exact: true }).fill(`AC${"0".repeat(32)}`);
    await form.getByRole("button", { name: "Add line", exact: true }).click();
    await waitForText(form.getByRole("alert"), /PUBLIC_URL/);
    assert.deepEqual(
      (await lines()).map((l) => l.name),
      ["default"],
    );
    await assertAccessible(page, "the twilio form with an error");
    // BlueBubbles has its own; loopback none.
    await form.getByRole("combobox", { name: "Network", exact: true }).selectOption("bluebubbles");
    await form.getByRole("textbox", { name: "Server URL", exact: true }).waitFor({ timeout: UI_MS });
    assert.equal(await form.getByLabel("Webhook secret", { exact: true }).getAttribute("type"), "password");
    assert.equal(await form.getByLabel("Account SID", { exact: true }).count(), 0);
    await form.getByRole("combobox", { name: "Network", exact: true }).selectOption("loopback");
    await waitFor("the network's fields to go", async () => (await form.getByLabel("Server URL", { exact: true }).count()) === 0);
  });

  test("Add line adds a loopback line and lists it; Test says it is ok", async () => {
    const { page } = app.tab;
    const form = newLineForm(page);
    await form.getByRole("textbox", { name: "Name", exact: true }).fill("sales");
    await form.getByRole("textbox", { name: "Address", exact: true }).fill("+14155550111");
    await form.getByRole("button", { name: "Add line", exact: true }).click();
    await waitForText(form.getByRole("status"), /Line sales added\./);
    const region = lineRegion(page, "sales");
    const text = await waitForText(region, /Network:\s*loopback/);
    assert.match(text, /Address:\s*\+14155550111/);
    assert.match(text, /State:\s*Enabled/);
    assert.match(text, /Managed by:\s*the API/);
    assert.doesNotMatch(text, /Default/);
    assert.deepEqual(await lineNamed("sales"), {
      ...(await lineNamed("sales"))!,
      network: "loopback",
      address: "+14155550111",
      enabled: true,
      default: false,
      managed: "api",
    });
    await region.getByRole("button", { name: "Test", exact: true }).click();
    await waitForText(region.getByRole("status"), /Test passed: loopback: delivers every message at once/);
  });

  test("Edit changes the address and the fallback; credentials and settings not asked of loopback", async () => {
    const { page } = app.tab;
    await lineRegion(page, "sales").getByRole("button", { name: "Edit", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Edit line sales" });
    await dialog.waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the edit dialog");
    assert.equal(await dialog.locator("input[type=password]").count(), 0);
    assert.match((await dialog.textContent()) ?? "", /A loopback line needs no settings/);
    await dialog.getByRole("textbox", { name: "Address", exact: true }).fill("+14155550199");
    await dialog.getByRole("combobox", { name: "Fallback", exact: true }).selectOption({ label: "default (loopback)" });
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await waitFor("the dialog to close", async () => (await page.getByRole("dialog").count()) === 0);
    const text = await waitForText(lineRegion(page, "sales"), /Address:\s*\+14155550199/);
    assert.match(text, /Fallback:\s*default/);
    const sales = await lineNamed("sales");
    assert.equal(sales?.address, "+14155550199");
    assert.equal(sales?.fallback, "ln_default");
  });

  test("Make default moves the mark; the default line cannot be disabled (409 shown); the environment's line takes it back", async () => {
    const { page } = app.tab;
    const sales = lineRegion(page, "sales");
    await sales.getByRole("button", { name: "Make default", exact: true }).click();
    await waitFor("sales to be the default", async () => (await sales.getByRole("button", { name: "Make default", exact: true }).count()) === 0);
    await lineRegion(page, "default").getByRole("button", { name: "Make default", exact: true }).waitFor({ timeout: UI_MS });
    assert.equal((await lineNamed("sales"))?.default, true);
    assert.equal((await lineNamed("default"))?.default, false);
    await sales.getByRole("button", { name: "Disable", exact: true }).click();
    await waitForText(sales.getByRole("alert"), /default line/);
    assert.equal((await lineNamed("sales"))?.enabled, true);
    await lineRegion(page, "default").getByRole("button", { name: "Make default", exact: true }).click();
    await sales.getByRole("button", { name: "Make default", exact: true }).waitFor({ timeout: UI_MS });
    assert.equal((await lineNamed("default"))?.default, true);
  });

  test("Disable stops a line; Enable brings it back", async () => {
    const { page } = app.tab;
    const sales = lineRegion(page, "sales");
    await sales.getByRole("button", { name: "Disable", exact: true }).click();
    await waitForText(sales, /State:\s*Disabled/);
    assert.equal((await lineNamed("sales"))?.enabled, false);
    await sales.getByRole("button", { name: "Enable", exact: true }).click();
    await waitForText(sales, /State:\s*Enabled/);
    assert.equal((await lineNamed("sales"))?.enabled, true);
  });

  test("Delete asks first, then deletes a line that carried no message", async () => {
    const { page } = app.tab;
    const form = newLineForm(page);
    await form.getByRole("textbox", { name: "Name", exact: true }).fill("spare");
    await form.getByRole("button", { name: "Add line", exact: true }).click();
    await lineRegion(page, "spare").getByRole("button", { name: "Delete", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this line?" });
    await dialog.waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the delete dialog");
    await dialog.getByRole("button", { name: "Delete line", exact: true }).click();
    await waitFor("the line to go", async () => (await lineRegion(page, "spare").count()) === 0);
    assert.deepEqual(
      (await lines()).map((l) => l.name),
      ["default", "sales"],
    );
  });

  test("with two lines each message shows its line, and the composer shows where routing sends and sends on the line chosen", async () => {
    const { page } = app.tab;
    await openThread(page, first);
    const greeting = itemWith(thread(page, first), "Hello, is the shop open?", "li");
    await waitForText(greeting, /Line default/);
    const choice = page.getByRole("combobox", { name: "Line", exact: true }).last();
    // Sticky: the contact's last message is on the environment's line.
    await waitForText(page.getByRole("status").filter({ hasText: /^Via / }), /Via default: sticky/);
    assert.equal(await choice.locator("option").first().textContent(), "Automatic (default)");
    await choice.selectOption({ label: "sales (loopback)" });
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("Yes, until 6 pm.");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await waitForText(itemWith(thread(page, first), "Yes, until 6 pm.", "li"), /Line sales/);
    const sales = (await lineNamed("sales"))!;
    const [sent] = await app.server.history(first);
    assert.equal(sent?.message, "Yes, until 6 pm.");
    assert.equal(sent?.line_id, sales.id);
    // Now the contact sticks to sales: Automatic says so.
    await choice.selectOption({ label: "Automatic (sales)" }, { timeout: UI_MS });
    await waitForText(page.getByRole("status").filter({ hasText: /^Via / }), /Via sales: sticky/);
    await assertAccessible(page, "a conversation with several lines");
  });

  test("a line that carried messages cannot be deleted: the 409 is shown in the dialog", async () => {
    const { page } = app.tab;
    await goTo(page, "Lines");
    await lineRegion(page, "sales").getByRole("button", { name: "Delete", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Delete this line?" });
    await dialog.getByRole("button", { name: "Delete line", exact: true }).click();
    await waitForText(dialog.getByRole("alert"), /has messages: disable it instead/);
    await dialog.getByRole("button", { name: "Cancel", exact: true }).click();
    assert.ok(await lineNamed("sales"));
  });

  test("the line filter keeps the conversations whose last message is on that line", async () => {
    const { page } = app.tab;
    await app.server.inbound(second, "Do you deliver?");
    await goTo(page, "Conversations");
    await waitFor("both conversations", async () => (await conversationLinks(page).count()) === 2);
    await lineFilter(page).selectOption({ label: "sales" });
    await waitFor(
      "only the first contact",
      async () => (await conversationLinks(page).allTextContents()).join("|").includes(first) && (await conversationLinks(page).count()) === 1,
    );
    await lineFilter(page).selectOption({ label: "default" });
    await waitFor(
      "only the second contact",
      async () => (await conversationLinks(page).allTextContents()).join("|").includes(second) && (await conversationLinks(page).count()) === 1,
    );
    await assertAccessible(page, "the conversation list filtered by line");
    await lineFilter(page).selectOption({ label: "All lines" });
    await waitFor("both again", async () => (await conversationLinks(page).count()) === 2);
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
