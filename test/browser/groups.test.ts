// Group chats in the console (docs/console.md "Group chats"): groups in the conversation
// list with their unread counts, a group's thread with each received message's sender,
// marking it read when opened, sending into it, creating one.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Page } from "playwright-core";
import { assertAccessible, assertOwnHostOnly, goTo, itemWith, LIVE_MS, newPhone, signedInConsole, UI_MS, waitFor, waitForText } from "./support";

type Chat = { id: string; name: string | null; participants: string[]; unread: number };
type ChatMessage = { id: string; phone: string | null; message: string; direction: string; status: string };

const conversationLinks = (page: Page) => page.getByRole("region", { name: "Conversation list" }).getByRole("link");
const groupThread = (page: Page, label: string) => page.getByRole("list", { name: `Messages in ${label}`, exact: true });

describe("group chats", () => {
  const [ann, bob, carol, dan] = [newPhone(), newPhone(), newPhone(), newPhone()];
  const family = { id: `chat-${Date.now()}`, name: "Family", participants: [ann, bob] };
  /** A group the network gave no name: the console calls it by its participants. */
  const unnamed = { id: `chat-${Date.now()}-2`, participants: [carol, dan] };
  const app = signedInConsole({
    async seed(server) {
      await server.inbound(ann, "who is cooking tonight?", { chat: family });
      await server.inbound(bob, "I am, at 8", { chat: family });
      await server.inbound(carol, "anyone up for tennis?", { chat: unnamed });
      await server.inbound(dan, "a direct hello");
    },
  });
  const chats = async () => (await app.server.api<{ chats: Chat[] }>("GET", "/api/chats?kind=group")).chats;
  const messagesOf = async (id: string) => (await app.server.api<{ messages: ChatMessage[] }>("GET", `/api/chats/${id}/messages`)).messages;
  const unreadOf = async (participant: string) => (await chats()).find((c) => c.participants.includes(participant))!.unread;

  test("the list holds each group by its name, or its participants when it has none, beside the contacts", async () => {
    const { page } = app.tab;
    await goTo(page, "Conversations");
    await waitFor("three conversations", async () => (await conversationLinks(page).count()) === 3);
    const texts = await conversationLinks(page).allTextContents();
    // Latest activity first: the direct hello, then the unnamed group, then Family.
    assert.match(texts[0]!, new RegExp(`\\${dan}[\\s\\S]*a direct hello`));
    assert.match(texts[1]!, new RegExp(`\\${carol}, \\${dan}[\\s\\S]*Group of 3`));
    assert.match(texts[2]!, /Family[\s\S]*Group of 3/);
    // Each group's inbound messages not read, as a contact's.
    await waitForText(conversationLinks(page).filter({ hasText: "Family" }), /Family 2 unread/);
    await waitForText(conversationLinks(page).filter({ hasText: `${carol}, ${dan}` }), /1 unread/);
    await assertAccessible(page, "the conversation list with groups");
  });

  test("a group's thread shows who sent each received message, and sends into the group", async () => {
    const { page } = app.tab;
    await conversationLinks(page).filter({ hasText: "Family" }).click();
    await page.getByRole("heading", { level: 2, name: "Family", exact: true }).waitFor({ timeout: UI_MS });
    const thread = groupThread(page, "Family");
    await thread.waitFor({ timeout: UI_MS });
    await waitForText(itemWith(thread, "who is cooking tonight?", "li"), new RegExp(`From \\${ann}`));
    await waitForText(itemWith(thread, "I am, at 8", "li"), new RegExp(`From \\${bob}`));
    assert.match((await page.getByText(/^Group with /).textContent()) ?? "", new RegExp(`\\${ann}, \\${bob}`));
    await assertAccessible(page, "a group's thread");

    await page.getByRole("textbox", { name: "Message", exact: true }).fill("See you all at 8");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await waitForText(itemWith(thread, "See you all at 8", "li"), /Sent[\s\S]*delivered/);
    const group = (await chats()).find((c) => c.name === "Family")!;
    const [ours] = await messagesOf(group.id);
    assert.deepEqual([ours!.message, ours!.direction, ours!.phone], ["See you all at 8", "outbound", null]);
    // Nothing of it in either person's own conversation.
    assert.deepEqual(await app.server.history(ann), []);
  });

  test("opening a group's thread marks its messages read, and those arriving while it is open; the list's count clears", async () => {
    const { page } = app.tab;
    const label = `${carol}, ${dan}`;
    const link = conversationLinks(page).filter({ hasText: label });
    await goTo(page, "Conversations");
    await waitForText(link, /1 unread/);
    assert.equal(await unreadOf(carol), 1);
    await link.click();
    await page.getByRole("heading", { level: 2, name: label, exact: true }).waitFor({ timeout: UI_MS });
    await waitFor("the count to clear", async () => !/unread/.test((await link.textContent()) ?? ""));
    assert.equal(await unreadOf(carol), 0);

    await app.server.inbound(dan, "count me in", { chat: unnamed });
    await waitForText(itemWith(groupThread(page, label), "count me in", "li"), new RegExp(`From \\${dan}`), LIVE_MS);
    await waitFor("the new message read", async () => (await unreadOf(carol)) === 0);
    // The list learns it when its refresh after the read lands, a moment after the server.
    await waitFor("the list's count to clear again", async () => !/unread/.test((await link.textContent()) ?? ""));
  });

  test("“New group” creates a group by sending its first message, then opens it", async () => {
    const { page } = app.tab;
    const [eve, fay] = [newPhone(), newPhone()];
    await page.getByRole("button", { name: "New group", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "New group" });
    await dialog.getByLabel("Participants").fill(`${eve},\n${fay}`);
    await dialog.getByLabel("Name").fill("Book club");
    await dialog.getByLabel("Message").fill("First meeting on Friday?");
    await assertAccessible(page, "the New group dialog");
    await dialog.getByRole("button", { name: "Create group", exact: true }).click();
    await page.getByRole("heading", { level: 2, name: "Book club", exact: true }).waitFor({ timeout: UI_MS });
    await waitForText(itemWith(groupThread(page, "Book club"), "First meeting on Friday?", "li"), /Sent/);
    await waitFor("the group in the list", async () => (await conversationLinks(page).filter({ hasText: "Book club" }).count()) === 1);
    const made = (await chats()).find((c) => c.name === "Book club");
    assert.deepEqual(made?.participants, [eve, fay]);

    // One number is not a group: the server's error names the field, and the dialog stays.
    await page.getByRole("button", { name: "New group", exact: true }).click();
    await dialog.getByLabel("Participants").fill(eve);
    await dialog.getByLabel("Message").fill("hi");
    await dialog.getByRole("button", { name: "Create group", exact: true }).click();
    await waitForText(dialog.getByRole("alert"), /participants/);
    assertOwnHostOnly(app.tab);
  });
});
