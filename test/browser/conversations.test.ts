// Conversations: the list, threads, sending, live updates, opt-outs, scheduled sends
// (docs/console.md "Conversations").
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import {
  assertAccessible,
  assertOwnHostOnly,
  goTo,
  itemWith,
  LIVE_MS,
  newPhone,
  RED_PIXEL_PNG,
  signedInConsole,
  startFileServer,
  threadList as thread,
  UI_MS,
  waitFor,
  waitForText,
  type MessageRecord,
} from "./support";

const threadPath = (phone: string) => `/console/conversations/${encodeURIComponent(phone)}`;
const message = (page: Page, phone: string, text: string | RegExp) => itemWith(thread(page, phone), text, "li");
const conversationLinks = (page: Page) => page.getByRole("region", { name: "Conversation list" }).getByRole("link");

async function openThread(page: Page, phone: string): Promise<void> {
  await page.goto(threadPath(phone));
  await page.getByRole("heading", { level: 2, name: phone, exact: true }).waitFor({ timeout: UI_MS });
  await thread(page, phone).waitFor({ timeout: UI_MS });
}

describe("conversations", () => {
  let files: Awaited<ReturnType<typeof startFileServer>>;
  /** Outbound only. */
  const quiet = newPhone();
  /** Inbound, a threaded reply, then an image. */
  const talker = newPhone();
  /** A scheduled send that failed because the contact replied STOP before it went. */
  const stopper = newPhone();
  let talkerSeed: MessageRecord[];

  // The image's server first: the seed below links to it.
  before(async () => {
    files = await startFileServer({ "/pixel.png": { type: "image/png", bytes: RED_PIXEL_PNG } });
  });
  after(async () => {
    await files?.close();
  });
  const app = signedInConsole({
    async seed(server) {
      await server.send(quiet, "Your code is 482913");
      const question = await server.inbound(talker, "Hi, is my order ready?");
      await server.send(talker, "Yes, you can pick it up today.", { reply_to: question.message_id });
      await server.inbound(talker, "", { media: [{ url: `${files.url}/pixel.png` }] });
      await server.send(stopper, "Reminder: your appointment is soon.", { send_at: new Date(Date.now() + 1500).toISOString() });
      await server.inbound(stopper, "STOP");
      await waitFor("the scheduled send to fail (the contact opted out)", async () => (await server.history(stopper)).find((m) => m.status === "failed"), 15_000);
      talkerSeed = (await server.history(talker)).reverse();
    },
  });

  test("the list holds one link per contact, latest activity first, with its last message", async () => {
    const { page } = app.tab;
    await goTo(page, "Conversations");
    await waitFor("three conversations", async () => (await conversationLinks(page).count()) === 3);
    const texts = await conversationLinks(page).allTextContents();
    assert.match(texts[0]!, new RegExp(`\\${stopper}[\\s\\S]*STOP`));
    assert.match(texts[1]!, new RegExp(`\\${talker}`));
    assert.match(texts[2]!, new RegExp(`\\${quiet}[\\s\\S]*Your code is 482913`));
  });

  test("the search box keeps the conversations whose number contains what is typed", async () => {
    const { page } = app.tab;
    const search = page.getByRole("searchbox", { name: "Search by number" });
    await search.fill(quiet.slice(-4));
    await waitFor("one conversation left", async () => (await conversationLinks(page).count()) === 1);
    assert.match((await conversationLinks(page).first().textContent()) ?? "", new RegExp(`\\${quiet}`));
    await search.fill("");
    await waitFor("every conversation back", async () => (await conversationLinks(page).count()) === 3);
  });

  test("a link opens the thread; its messages oldest first with direction, time, status, reply and image", async () => {
    const { page } = app.tab;
    await conversationLinks(page).filter({ hasText: talker }).click();
    await page.getByRole("heading", { level: 2, name: talker, exact: true }).waitFor({ timeout: UI_MS });
    assert.equal(new URL(page.url()).pathname, threadPath(talker));
    const items = thread(page, talker).locator(":scope > li");
    await waitFor("three messages", async () => (await items.count()) === 3);
    const expected = [
      { label: "Received", text: "Hi, is my order ready?", status: "received" },
      { label: "Sent", text: "Yes, you can pick it up today.", status: "delivered" },
      { label: "Received", text: "", status: "received" },
    ];
    for (const [i, want] of expected.entries()) {
      const item = items.nth(i);
      const text = (await item.textContent()) ?? "";
      assert.ok(text.includes(want.label), `message ${i} says ${want.label}: ${text}`);
      assert.ok(text.includes(want.text), `message ${i} holds its text: ${text}`);
      assert.ok(text.includes(want.status), `message ${i} shows its status ${want.status}: ${text}`);
      assert.equal(await item.locator("time").first().getAttribute("datetime"), talkerSeed[i]!.timestamp);
    }
    assert.match((await items.nth(1).textContent()) ?? "", /Reply to[\s\S]*Hi, is my order ready\?/);
    const image = items.nth(2).locator("img");
    assert.equal(await image.getAttribute("src"), talkerSeed[2]!.media[0]!.url);
    // The image loads with the session cookie alone (GET /api/media/:id by cookie).
    await waitFor("the image to load", () => image.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 1));
    await assertAccessible(page, "a thread");
  });

  test("a failed message shows its error; an opted-out contact shows it and its composer is disabled", async () => {
    const { page } = app.tab;
    await openThread(page, stopper);
    const failed = message(page, stopper, "Reminder: your appointment is soon.");
    const record = (await app.server.history(stopper)).find((m) => m.status === "failed")!;
    assert.ok(record.error);
    await waitForText(failed, /failed/);
    assert.ok(((await failed.textContent()) ?? "").includes(record.error), "the failed message shows its error");
    await page.getByText("Opted out", { exact: true }).waitFor({ timeout: UI_MS });
    assert.equal(await page.getByRole("textbox", { name: "Message", exact: true }).isDisabled(), true);
    assert.equal(await page.getByRole("button", { name: "Send", exact: true }).isDisabled(), true);
  });

  test("Send from a thread sends: the message appears, and REST history has it", async () => {
    const { page } = app.tab;
    await openThread(page, talker);
    const field = page.getByRole("textbox", { name: "Message", exact: true });
    await field.fill("See you at five.");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await message(page, talker, "See you at five.").waitFor({ timeout: UI_MS });
    await waitFor("the field to empty", async () => (await field.inputValue()) === "");
    const [newest] = await app.server.history(talker);
    assert.equal(newest?.message, "See you at five.");
    assert.equal(newest?.direction, "outbound");
    assert.equal(newest?.status, "delivered");
  });

  test("New message: a wrong number shows the server's error; a right one sends and opens its thread", async () => {
    const { page } = app.tab;
    const phone = newPhone();
    await page.getByRole("button", { name: "New message", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "New message" });
    await dialog.waitFor({ timeout: UI_MS });
    const phoneField = dialog.getByRole("textbox", { name: "Phone", exact: true });
    await waitFor("the Phone field to have focus", () => phoneField.evaluate((el) => el === document.activeElement));
    await phoneField.fill("+1");
    await dialog.getByRole("textbox", { name: "Message", exact: true }).fill("Welcome aboard!");
    await dialog.getByRole("button", { name: "Send", exact: true }).click();
    await dialog.getByRole("alert").filter({ hasText: /phone: must be E\.164/ }).waitFor({ timeout: UI_MS });
    await phoneField.fill(phone);
    await dialog.getByRole("button", { name: "Send", exact: true }).click();
    await page.getByRole("heading", { level: 2, name: phone, exact: true }).waitFor({ timeout: UI_MS });
    assert.equal(await dialog.count(), 0);
    await message(page, phone, "Welcome aboard!").waitFor({ timeout: UI_MS });
    const history = await app.server.history(phone);
    assert.deepEqual(history.map((m) => [m.direction, m.message]), [["outbound", "Welcome aboard!"]]);
  });

  test("an inbound message appears in the open thread and the list within 5 s, without reload", async () => {
    const { page } = app.tab;
    await openThread(page, talker);
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await app.server.inbound(talker, "Running ten minutes late!");
    const started = Date.now();
    await message(page, talker, "Running ten minutes late!").waitFor({ timeout: LIVE_MS });
    await conversationLinks(page).filter({ hasText: "Running ten minutes late!" }).waitFor({ timeout: LIVE_MS - (Date.now() - started) });
    assert.equal(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded), true);
    assert.equal(await conversationLinks(page).first().textContent().then((t) => t?.includes(talker)), true, "the thread is first in the list");
  });

  test("a status change appears within 5 s: a scheduled send becomes delivered", async () => {
    const { page } = app.tab;
    // A new scheduled message is no event (docs/webhooks.md "Events"): the thread opens after it.
    const { message_id } = await app.server.send(talker, "Your table is ready.", { send_at: new Date(Date.now() + 3000).toISOString() });
    await openThread(page, talker);
    const item = message(page, talker, "Your table is ready.");
    await waitForText(item, /scheduled/);
    await waitFor("the scheduled sender to deliver it", async () => (await app.server.history(talker)).find((m) => m.id === message_id && m.status === "delivered"), 15_000);
    await waitForText(item, /delivered/, LIVE_MS);
  });

  test("a scheduled message is listed with Cancel; Cancel cancels it on the server", async () => {
    const { page } = app.tab;
    const { message_id } = await app.server.send(quiet, "Happy birthday!", { send_at: new Date(Date.now() + 3_600_000).toISOString() });
    await openThread(page, quiet);
    const scheduled = page.getByRole("region", { name: "Scheduled" });
    const entry = itemWith(scheduled, "Happy birthday!", "li");
    await entry.waitFor({ timeout: UI_MS });
    await entry.getByRole("button", { name: "Cancel", exact: true }).click();
    await waitFor("the server to cancel it", async () => (await app.server.history(quiet)).find((m) => m.id === message_id && m.status === "canceled"));
    await waitForText(message(page, quiet, "Happy birthday!"), /canceled/);
    await waitFor("the Scheduled list to empty", async () => (await scheduled.getByRole("button", { name: "Cancel", exact: true }).count()) === 0);
  });

  test("on loopback, Simulate inbound receives a message from the contact", async () => {
    const { page } = app.tab;
    await openThread(page, quiet);
    await page.getByRole("textbox", { name: "Inbound message", exact: true }).fill("Thanks!");
    await page.getByRole("button", { name: "Receive", exact: true }).click();
    await waitForText(message(page, quiet, "Thanks!"), /Received/);
    const [newest] = await app.server.history(quiet);
    assert.deepEqual([newest?.direction, newest?.message, newest?.status], ["inbound", "Thanks!", "received"]);
  });

  test("the list and the New message dialog have no serious or critical axe-core violations", async () => {
    const { page } = app.tab;
    await goTo(page, "Conversations");
    await conversationLinks(page).first().waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the conversation list");
    await page.getByRole("button", { name: "New message", exact: true }).click();
    await page.getByRole("dialog", { name: "New message" }).waitFor({ timeout: UI_MS });
    await assertAccessible(page, "the New message dialog");
    await page.keyboard.press("Escape");
    await waitFor("the dialog to close", async () => (await page.getByRole("dialog").count()) === 0);
  });

  test("the pages requested nothing from any host but the server, without page errors or CSP refusals", () => {
    assertOwnHostOnly(app.tab);
  });
});
