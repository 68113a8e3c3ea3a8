// Conversation state on the console: reactions on bubbles, "Read", "typing…", unread counts,
// and React, Edit and Unsend on a bubble (docs/console.md "Conversations"). The contact's
// side is forged with POST /webhooks/loopback (docs/networks.md, the loopback network).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import {
  assertAccessible,
  assertOwnHostOnly,
  goTo,
  isFocused,
  itemWith,
  LIVE_MS,
  newPhone,
  signedInConsole,
  tabTo,
  threadList as thread,
  UI_MS,
  waitFor,
  waitForText,
  type MessageRecord,
} from "./support";

const message = (page: Page, phone: string, text: string | RegExp) => itemWith(thread(page, phone), text, "li");
const conversationLink = (page: Page, phone: string) =>
  page.getByRole("region", { name: "Conversation list" }).getByRole("link").filter({ hasText: phone });
const button = (scope: ReturnType<Page["locator"]> | Page, name: string) => scope.getByRole("button", { name, exact: true });

async function openThread(page: Page, phone: string): Promise<void> {
  await page.goto(`/console/conversations/${encodeURIComponent(phone)}`);
  await page.getByRole("heading", { level: 2, name: phone, exact: true }).waitFor({ timeout: UI_MS });
  await thread(page, phone).waitFor({ timeout: UI_MS });
}

describe("conversation state", () => {
  /** Our message, then the contact's tapback, our own reactions and a read receipt. */
  const reader = newPhone();
  /** Two inbound messages nobody read. */
  const asker = newPhone();
  /** Our messages to edit and to unsend. */
  const editor = newPhone();
  let shipped: string;
  const app = signedInConsole({
    async seed(server) {
      shipped = (await server.send(reader, "Your order has shipped.")).message_id;
      await server.inbound(asker, "Hello?");
      await server.inbound(asker, "Is anyone there?");
    },
  });
  const history = async (phone: string, id: string) => (await app.server.history(phone)).find((m) => m.id === id)!;
  const ourReaction = (record: MessageRecord) => record.reactions.find((r) => r.direction === "outbound")?.reaction;

  test("the list shows a conversation's unread count; opening its thread marks it read and the count clears", async () => {
    const { page } = app.tab;
    await goTo(page, "Conversations");
    await waitForText(conversationLink(page, asker), /2 unread/);
    assert.doesNotMatch((await conversationLink(page, reader).textContent()) ?? "", /unread/);
    await assertAccessible(page, "the list with an unread count");
    await conversationLink(page, asker).click();
    await page.getByRole("heading", { level: 2, name: asker, exact: true }).waitFor({ timeout: UI_MS });
    await waitFor("the count to clear", async () => !/unread/.test((await conversationLink(page, asker).textContent()) ?? ""));
    const contact = await app.server.api<{ contact: { unread: number } }>("GET", `/api/contacts/${encodeURIComponent(asker)}`);
    assert.equal(contact.contact.unread, 0);
  });

  test("the contact's messages offer React only; ours React, Edit and Unsend", async () => {
    const { page } = app.tab;
    await openThread(page, asker);
    const theirs = message(page, asker, "Hello?");
    await button(theirs, "React").waitFor({ timeout: UI_MS });
    assert.equal(await button(theirs, "Edit").count(), 0);
    assert.equal(await button(theirs, "Unsend").count(), 0);
    await openThread(page, reader);
    const ours = message(page, reader, "Your order has shipped.");
    for (const name of ["React", "Edit", "Unsend"]) await button(ours, name).waitFor({ timeout: UI_MS });
  });

  test("a tapback from the contact appears on our message within 5 s", async () => {
    const { page } = app.tab;
    await openThread(page, reader);
    await app.server.inbound(reader, "", { reaction: { message_id: shipped, reaction: "love" } });
    await waitForText(message(page, reader, "Your order has shipped."), new RegExp(`\\${reader}: \\S* ?Love`), LIVE_MS);
  });

  test("React: our reaction shows on the bubble and in history; Remove my reaction takes it off", async () => {
    const { page } = app.tab;
    await openThread(page, reader);
    const bubble = message(page, reader, "Your order has shipped.");
    await button(bubble, "React").click();
    const dialog = page.getByRole("dialog", { name: "React" });
    await dialog.waitFor({ timeout: UI_MS });
    for (const name of ["Love", "Like", "Dislike", "Laugh", "Emphasize", "Question"]) await button(dialog, name).waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the React dialog");
    await button(dialog, "Like").click();
    await waitFor("the dialog to close", async () => (await dialog.count()) === 0);
    await waitForText(bubble, /You: \S* ?Like/);
    assert.equal(ourReaction(await history(reader, shipped)), "like");
    await assertAccessible(page, "a thread with reactions");

    await button(bubble, "React").click();
    await dialog.waitFor({ timeout: UI_MS });
    assert.equal(await button(dialog, "Like").getAttribute("aria-pressed"), "true");
    await button(dialog, "Remove my reaction").click();
    await waitFor("the dialog to close", async () => (await dialog.count()) === 0);
    await waitFor("our reaction to go", async () => !/You:/.test((await bubble.textContent()) ?? ""));
    assert.equal(ourReaction(await history(reader, shipped)), undefined);
  });

  test("keyboard alone: Tab to React, Enter opens the dialog, Tab to Laugh, Enter reacts; the focus returns to React", async () => {
    const { page } = app.tab;
    await openThread(page, reader);
    const bubble = message(page, reader, "Your order has shipped.");
    const react = button(bubble, "React");
    await tabTo(page, react, "React");
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "React" });
    await dialog.waitFor({ timeout: UI_MS });
    await tabTo(page, button(dialog, "Laugh"), "Laugh");
    await page.keyboard.press("Enter");
    await waitFor("the dialog to close", async () => (await dialog.count()) === 0);
    await waitForText(bubble, /You: \S* ?Laugh/);
    assert.equal(ourReaction(await history(reader, shipped)), "laugh");
    await waitFor("the focus back on React", () => isFocused(react));
  });

  test("Read shows under our last message the contact read", async () => {
    const { page } = app.tab;
    const { message_id: later } = await app.server.send(reader, "It arrives Tuesday.");
    await openThread(page, reader);
    await app.server.inbound(reader, "", { read: { message_id: later } });
    await waitForText(message(page, reader, "It arrives Tuesday."), /\bRead\b/, LIVE_MS);
    assert.doesNotMatch((await message(page, reader, "Your order has shipped.").textContent()) ?? "", /\bRead\b/, "only under the last one read");
    assert.notEqual((await history(reader, later)).read_at, null);
  });

  test("typing… shows while the contact types and goes when it stops, within 5 s", async () => {
    const { page } = app.tab;
    await openThread(page, reader);
    const typing = page.getByRole("status").filter({ hasText: "typing…" });
    await app.server.inbound(reader, "", { typing: true });
    await typing.waitFor({ timeout: LIVE_MS });
    await app.server.inbound(reader, "", { typing: false });
    await typing.waitFor({ state: "detached", timeout: LIVE_MS });
  });

  test("Edit: the field Message and Save edit our message, marked Edited; past 5 edits the server's 409 shows", async () => {
    const { page } = app.tab;
    const { message_id } = await app.server.send(editor, "See you at 5.");
    await openThread(page, editor);
    await button(message(page, editor, "See you at 5."), "Edit").click();
    const dialog = page.getByRole("dialog", { name: "Edit message" });
    const field = dialog.getByRole("textbox", { name: "Message", exact: true });
    await waitFor("the focus on Message", () => isFocused(field));
    assert.equal(await field.inputValue(), "See you at 5.");
    await assertAccessible(page, "the Edit dialog");
    await field.fill("See you at 6.");
    await button(dialog, "Save").click();
    await waitFor("the dialog to close", async () => (await dialog.count()) === 0);
    const bubble = message(page, editor, "See you at 6.");
    await waitForText(bubble, /Edited/);
    const edited = await history(editor, message_id);
    assert.equal(edited.message, "See you at 6.");
    assert.notEqual(edited.edited_at, null);

    for (const n of [7, 8, 9, 10]) await app.server.trpc("mutation", "messages.edit", { id: message_id, message: `See you at ${n}.` });
    const last = message(page, editor, "See you at 10.");
    await last.waitFor({ timeout: LIVE_MS });
    await button(last, "Edit").click();
    await field.fill("See you at 11.");
    await button(dialog, "Save").click();
    await dialog.getByRole("alert").filter({ hasText: /edited 5 times already/ }).waitFor({ timeout: UI_MS });
    await page.keyboard.press("Escape");
    await waitFor("the dialog to close", async () => (await dialog.count()) === 0);
    assert.equal((await history(editor, message_id)).message, "See you at 10.");
  });

  test("Unsend, confirmed: the message shows Unsent, its text gone, on the page and in history", async () => {
    const { page } = app.tab;
    const { message_id } = await app.server.send(editor, "Wrong number, sorry.");
    await openThread(page, editor);
    await button(message(page, editor, "Wrong number, sorry."), "Unsend").click();
    const dialog = page.getByRole("dialog", { name: "Unsend message" });
    await dialog.waitFor({ timeout: UI_MS });
    await button(dialog, "Unsend").click();
    await waitFor("the dialog to close", async () => (await dialog.count()) === 0);
    await waitFor("the text to go", async () => (await thread(page, editor).getByText("Wrong number, sorry.").count()) === 0);
    const unsent = thread(page, editor).locator(":scope > li").last();
    await waitForText(unsent, /Unsent/);
    assert.equal(await button(unsent, "Unsend").count(), 0);
    const record = await history(editor, message_id);
    assert.equal(record.message, "");
    assert.notEqual(record.unsent_at, null);
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
