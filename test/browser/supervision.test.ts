// Supervision on the console (docs/supervision.md): the Drafts inbox (approve, edit and approve,
// reject; by keyboard; axe-clean; a new draft arrives live), each conversation's mode and its
// switch, and the "paused" banner with "Hand back" after an operator's reply from the composer.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { assertAccessible, assertOwnHostOnly, ECHO_WORKFLOW, isFocused, LIVE_MS, newPhone, signedInConsole, tabTo, threadList, UI_MS, waitFor, waitForText } from "./support";

const dm = (phone: string) => `dm_${phone.slice(1)}`;
const draftsList = (page: Page) => page.getByRole("list", { name: "Drafts", exact: true });
const draftFor = (page: Page, phone: string) => draftsList(page).getByRole("article", { name: `To ${phone}`, exact: true });

async function openDrafts(page: Page): Promise<void> {
  await page.getByRole("navigation").getByRole("link", { name: "Drafts", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "Drafts", exact: true }).waitFor({ timeout: UI_MS });
}

describe("supervision", () => {
  /** Supervised: its echo is a draft the operator edits and approves. */
  const edited = newPhone();
  /** Supervised: its echo is rejected. */
  const rejected = newPhone();
  /** Supervised, written to while the inbox is open: its draft arrives live. */
  const late = newPhone();
  /** Auto: the operator replies from the console and the echo workflow stays silent. */
  const operated = newPhone();
  const app = signedInConsole({
    async seed(server) {
      for (const phone of [edited, rejected, late]) {
        await server.inbound(phone, `hello from ${phone}`);
        await server.api("PATCH", `/api/chats/${dm(phone)}`, { mode: "supervised" });
      }
      await server.inbound(operated, "is a person there?");
      await server.trpc("mutation", "workflows.run", { name: ECHO_WORKFLOW });
    },
  });
  const statusOf = async (phone: string) => (await app.server.history(phone)).filter((m) => m.direction === "outbound").map((m) => [m.message, m.status]);

  test("the inbox lists the drafts; edited by keyboard and approved, one is sent once with the new text", async () => {
    const { page } = app.tab;
    await openDrafts(page);
    await draftFor(page, edited).waitFor({ timeout: UI_MS });
    assert.equal(await draftsList(page).getByRole("article").count(), 3);
    await assertAccessible(page, "the Drafts inbox");
    const field = draftFor(page, edited).getByRole("textbox", { name: "Reply", exact: true });
    await tabTo(page, field, "the draft's text");
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.type("Hello! A person checked this reply.");
    const approve = draftFor(page, edited).getByRole("button", { name: "Approve edited", exact: true });
    await tabTo(page, approve, "Approve edited");
    assert.ok(await isFocused(approve));
    await page.keyboard.press("Enter");
    await draftFor(page, edited).waitFor({ state: "detached", timeout: UI_MS });
    await waitFor("the approved send", async () => JSON.stringify(await statusOf(edited)) === JSON.stringify([["Hello! A person checked this reply.", "delivered"]]));
    // Approving again is refused: it is no longer a draft.
    const again = await app.server.fetch(`/api/messages/${(await app.server.history(edited))[0]!.id}/approve`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    assert.equal(again.status, 409);
    assert.deepEqual(await statusOf(edited), [["Hello! A person checked this reply.", "delivered"]]);
  });

  test("a rejected draft leaves the inbox and is never sent", async () => {
    const { page } = app.tab;
    await draftFor(page, rejected).getByRole("button", { name: "Reject", exact: true }).click();
    await draftFor(page, rejected).waitFor({ state: "detached", timeout: UI_MS });
    assert.deepEqual(await statusOf(rejected), [[`Echo: hello from ${rejected}`, "rejected"]]);
  });

  test("a new draft arrives live while the inbox is open, and is approved as written", async () => {
    const { page } = app.tab;
    await app.server.inbound(late, "one more question");
    await app.server.trpc("mutation", "workflows.run", { name: ECHO_WORKFLOW });
    const second = draftsList(page).getByRole("article").filter({ hasText: "one more question" });
    await second.waitFor({ timeout: LIVE_MS + UI_MS });
    await waitForText(page.getByRole("status").filter({ hasText: "waiting" }), /2 drafts waiting/);
    await second.getByRole("button", { name: "Approve", exact: true }).click();
    await second.waitFor({ state: "detached", timeout: UI_MS });
    assert.deepEqual((await statusOf(late)).find(([m]) => m === "Echo: one more question"), ["Echo: one more question", "delivered"]);
  });

  test("an operator's reply from the composer pauses automations there: the banner, the mode, and Hand back", async () => {
    const { page } = app.tab;
    await page.goto(`/console/conversations/${encodeURIComponent(operated)}`);
    await threadList(page, operated).waitFor({ timeout: UI_MS });
    const mode = page.getByRole("combobox", { name: "Mode", exact: true });
    await mode.waitFor({ timeout: UI_MS });
    assert.equal(await mode.inputValue(), "auto");
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("Hi, this is Sam from support.");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await page.getByText("Automated replies paused: a person replied").waitFor({ timeout: LIVE_MS + UI_MS });
    await waitFor("the mode to show human", async () => (await mode.inputValue()) === "human");
    await assertAccessible(page, "a thread paused for a person");
    // The echo workflow is skipped here now.
    await app.server.inbound(operated, "thanks Sam");
    await app.server.trpc("mutation", "workflows.run", { name: ECHO_WORKFLOW });
    assert.deepEqual(await statusOf(operated), [
      ["Hi, this is Sam from support.", "delivered"],
      ["Echo: is a person there?", "delivered"],
    ]);
    // Hand back: automated again, by keyboard.
    const handBack = page.getByRole("button", { name: "Hand back", exact: true });
    await tabTo(page, handBack, "Hand back");
    await page.keyboard.press("Enter");
    await page.getByText("Automated replies paused: a person replied").waitFor({ state: "detached", timeout: UI_MS });
    const chat = await app.server.api<{ chat: { mode: string } }>("GET", `/api/chats/${dm(operated)}`);
    assert.equal(chat.chat.mode, "auto");
    // The switch sets any mode.
    await mode.selectOption("supervised");
    await waitFor("the chat to be supervised", async () => (await app.server.api<{ chat: { mode: string } }>("GET", `/api/chats/${dm(operated)}`)).chat.mode === "supervised");
    assertOwnHostOnly(app.tab);
  });
});
