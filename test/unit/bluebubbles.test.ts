// The BlueBubbles driver's reactions, typing, read state, edits and unsends against the
// stand-in server (test/support/fake-bluebubbles.ts, which follows the real server's source):
// - what each action sends (route, chat guid, body) and what the Mac then shows;
// - the server's Private API off → 422 naming the field, nothing sent to the Mac; other
//   failures → 502 naming the network; an edit or unsend Apple ignored (200, dateEdited
//   unchanged) → 409;
// - webhooks as the stand-in posts them → the driver's events: tapbacks as reactions (never a
//   message, never a status), typing-indicator, read receipts, edits and unsends by guid,
//   and the same changes announced late as new-message.
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { AppError } from "../../src/errors";
import { createLogger } from "../../src/log";
import type { NetworkDriver, WebhookEvents } from "../../src/network/driver";
import { createBlueBubblesNetwork } from "../../src/network/bluebubbles";
import { bbMessage, startFakeBlueBubbles, type BbMessage, type FakeBlueBubbles } from "../support/fake-bluebubbles";

setDefaultTimeout(20_000);

const SECRET = "bb-unit-secret";
let fake: FakeBlueBubbles;
let driver: NetworkDriver;
/** Where the stand-in posts its webhooks: each one read by the driver, its events kept. */
let receiver: ReturnType<typeof Bun.serve>;
let received: { type: string; events: WebhookEvents }[] = [];
/** The driver's log lines, parsed. */
const debug: { msg: string; type?: string }[] = [];
const log = createLogger("debug", {}, (line) => void debug.push(JSON.parse(line)));

let n = 0;
const newPhone = () => `+1555${String(Date.now() % 1e4).padStart(4, "0")}${String(++n).padStart(3, "0")}`;

beforeAll(() => {
  fake = startFakeBlueBubbles({ privateApi: true });
  driver = createBlueBubblesNetwork({ url: fake.url, password: fake.password, webhookSecret: SECRET, sendTimeoutMs: 10_000, log });
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const result = await driver.webhook!({ url: new URL(req.url), subpath: "", headers: req.headers, body });
      const { response, ...events } = result;
      received.push({ type: JSON.parse(body).type, events });
      return response;
    },
  });
  fake.webhooks.push(`http://127.0.0.1:${receiver.port}/webhooks/bluebubbles?secret=${SECRET}`);
});
afterEach(() => {
  fake.privateApi.enabled = true;
  fake.privateApi.helperConnected = true;
  fake.appleIgnores = false;
  received = [];
  debug.length = 0;
});
afterAll(async () => {
  await receiver?.stop(true);
  await fake?.stop();
});

/** Our message, sent through the driver: on the Mac, with its guid. */
async function ours(phone: string, text = "See you at 6"): Promise<BbMessage> {
  fake.addChat(phone);
  const { networkId } = await driver.send({ id: crypto.randomUUID(), phone, text });
  const m = fake.messages.find((x) => x.guid === networkId)!;
  received = [];
  return m;
}

/** The contact's message, as the Mac announces it. */
async function theirs(phone: string, text = "Running late"): Promise<BbMessage> {
  fake.addChat(phone);
  const m = bbMessage({ address: phone, text });
  fake.messages.push(m);
  await fake.emit("new-message", m);
  received = [];
  return m;
}

async function failsWith(p: Promise<unknown>, code: string, message: string | RegExp) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code as string).toBe(code);
  if (typeof message === "string") expect((err as AppError).message).toBe(message);
  else expect((err as AppError).message).toMatch(message);
}

const only = (type: string) => received.filter((r) => r.type === type).map((r) => r.events);
const empty = { inbound: [], statuses: [], reactions: [], typing: [], reads: [], edits: [] };

describe("our actions reach the BlueBubbles server", () => {
  test("capabilities: everything, groups included", () => {
    expect(driver.capabilities).toEqual({ reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true });
  });

  test("react: message/react in the contact's chat on part 0 of the message; a removal is -<reaction>; its echo is no event", async () => {
    const phone = newPhone();
    const m = await theirs(phone);
    await driver.react!({ networkId: m.guid, phone }, "love", false);
    await driver.react!({ networkId: m.guid, phone }, "love", true);
    const reacts = fake.requests.filter((r) => r.path === "/api/v1/message/react");
    expect(reacts.slice(-2).map((r) => r.body)).toEqual([
      { chatGuid: `iMessage;-;${phone}`, selectedMessageGuid: m.guid, reaction: "love", partIndex: 0 },
      { chatGuid: `iMessage;-;${phone}`, selectedMessageGuid: m.guid, reaction: "-love", partIndex: 0 },
    ]);
    const tapbacks = fake.sent.slice(-2);
    expect(tapbacks.map((t) => [t.text, t.associatedMessageType, t.associatedMessageGuid])).toEqual([
      ["Loved “Running late”", "love", `p:0/${m.guid}`],
      ["Removed a heart “Running late”", "-love", `p:0/${m.guid}`],
    ]);
    // The echo of our own tapback (isFromMe, no tempGuid): neither a reaction nor a status.
    expect(only("new-message")).toEqual([empty, empty]);
  });

  test("typing on: POST chat/:guid/typing; off: nothing sent (the server's DELETE starts typing), 422; a text sent stops it on the Mac", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    const chat = `iMessage;-;${phone}`;
    await driver.typing!(phone, true);
    expect(fake.typing.has(chat)).toBe(true);
    const before = fake.requests.length;
    await failsWith(driver.typing!(phone, false), "UNPROCESSABLE_CONTENT", "typing: the bluebubbles server cannot stop typing without a send (its DELETE /chat/:guid/typing starts it again)");
    expect(fake.requests.length).toBe(before);
    expect(fake.requests.some((r) => r.method === "DELETE")).toBe(false);
    await driver.send({ id: crypto.randomUUID(), phone, text: "Here it is" });
    expect(fake.typing.has(chat)).toBe(false);
    expect(fake.typingStarts.filter((g) => g === chat)).toEqual([chat]);
  });

  test("the stand-in's DELETE /chat/:guid/typing starts typing, as the server at v1.9.9 does", async () => {
    const phone = newPhone();
    const chat = encodeURIComponent(`iMessage;-;${phone}`);
    const res = await fetch(`${fake.url}/api/v1/chat/${chat}/typing?password=${fake.password}`, { method: "DELETE" });
    expect(await res.json()).toEqual({ status: 200, message: "Successfully stopped typing!" });
    expect(fake.typing.has(`iMessage;-;${phone}`)).toBe(true);
  });

  test("markRead: POST chat/:guid/read of the contact's chat", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    await driver.markRead!(phone);
    expect(fake.reads.at(-1)).toBe(`iMessage;-;${phone}`);
    expect(only("chat-read-status-changed")).toEqual([empty]);
  });

  test("edit: message/:guid/edit with the text and its compatibility text; the Mac's copy changes", async () => {
    const phone = newPhone();
    const m = await ours(phone);
    await driver.edit!({ networkId: m.guid, phone }, "See you at 7");
    const req = fake.requests.filter((r) => r.path === `/api/v1/message/${m.guid}/edit`);
    expect(req.map((r) => r.body)).toEqual([{ editedMessage: "See you at 7", backwardsCompatibilityMessage: "Edited to “See you at 7”", partIndex: 0 }]);
    expect(m.text).toBe("See you at 7");
    expect(m.dateEdited).toBeGreaterThan(0);
    // Our own edit comes back as an updated-message: a report on our message, no edit event.
    const [update] = only("updated-message");
    expect(update!.edits).toEqual([]);
    expect(update!.statuses.map((s) => s.networkId)).toEqual([m.guid]);
  });

  test("unsend: message/:guid/unsend {partIndex: 0}; the Mac's copy has no text and no parts", async () => {
    const phone = newPhone();
    const m = await ours(phone);
    await driver.unsend!({ networkId: m.guid, phone });
    expect(fake.requests.filter((r) => r.path === `/api/v1/message/${m.guid}/unsend`).map((r) => r.body)).toEqual([{ partIndex: 0 }]);
    expect([m.text, m.partCount, m.messageSummaryInfo]).toEqual([null, 0, [{ retractedParts: [0] }]]);
  });

  test("an edit or unsend Apple ignored (200, dateEdited unchanged) → 409 CONFLICT", async () => {
    const phone = newPhone();
    const m = await ours(phone);
    fake.appleIgnores = true;
    await failsWith(driver.edit!({ networkId: m.guid, phone }, "changed"), "CONFLICT", /^message: iMessage did not apply the edit/);
    await failsWith(driver.unsend!({ networkId: m.guid, phone }), "CONFLICT", /^unsend: iMessage did not unsend/);
    expect(m.text).toBe("See you at 6");
  });

  test("Private API off → 422 naming the field, for each action; the Mac changes nothing", async () => {
    const phone = newPhone();
    const m = await ours(phone);
    fake.privateApi.enabled = false;
    const starts = fake.typingStarts.length;
    const sentBefore = fake.sent.length;
    await failsWith(driver.react!({ networkId: m.guid, phone }, "like", false), "UNPROCESSABLE_CONTENT", "reaction: the bluebubbles server's Private API is off");
    await failsWith(driver.typing!(phone, true), "UNPROCESSABLE_CONTENT", "typing: the bluebubbles server's Private API is off");
    await failsWith(driver.markRead!(phone), "UNPROCESSABLE_CONTENT", "read: the bluebubbles server's Private API is off");
    await failsWith(driver.edit!({ networkId: m.guid, phone }, "x"), "UNPROCESSABLE_CONTENT", "message: the bluebubbles server's Private API is off");
    await failsWith(driver.unsend!({ networkId: m.guid, phone }), "UNPROCESSABLE_CONTENT", "unsend: the bluebubbles server's Private API is off");
    expect([fake.typingStarts.length, fake.sent.length, m.text, m.dateEdited]).toEqual([starts, sentBefore, "See you at 6", null]);
  });

  test("the stand-in answers the Private API check before validating the body, as privateApiMiddleware runs first", async () => {
    fake.privateApi.enabled = false;
    const res = await fetch(`${fake.url}/api/v1/message/react?password=${fake.password}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({
      status: 500,
      message: "Please make sure you have completed the setup for the Private API, and your helper is connected!",
      error: { type: "iMessage Error", message: "iMessage Private API is not enabled!" },
    });
    fake.privateApi.enabled = true;
    const invalid = await fetch(`${fake.url}/api/v1/message/react?password=${fake.password}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ chatGuid: "x", selectedMessageGuid: "y", reaction: "wow" }) });
    expect(((await invalid.json()) as { error: unknown }).error).toEqual({ type: "Validation Error", message: "The selected reaction is invalid." });
    const info = await fetch(`${fake.url}/api/v1/server/info?password=${fake.password}`);
    expect(((await info.json()) as { data: unknown }).data).toMatchObject({ private_api: true, helper_connected: true });
  });

  test("helper not connected, or an unknown message → 502 naming the network", async () => {
    const phone = newPhone();
    const m = await theirs(phone);
    fake.privateApi.helperConnected = false;
    await failsWith(driver.react!({ networkId: m.guid, phone }, "like", false), "BAD_GATEWAY", "bluebubbles: the reaction failed: iMessage Private API Helper is not connected!");
    fake.privateApi.helperConnected = true;
    await failsWith(driver.react!({ networkId: "NOT-ON-THE-MAC", phone }, "like", false), "BAD_GATEWAY", "bluebubbles: the reaction failed: Selected message does not exist!");
    await failsWith(driver.edit!({ networkId: "NOT-ON-THE-MAC", phone }, "x"), "BAD_GATEWAY", /^bluebubbles: the message is not on the server/);
  });
});

describe("the server's webhooks become the driver's events", () => {
  test("the contact's tapback → a reaction on the target (p:N/ and bp: stripped), -x a removal; never a message or a status", async () => {
    const phone = newPhone();
    const m = await ours(phone);
    const t1 = await fake.contactReacts(m, "love");
    await fake.contactReacts(m, "-love", { partIndex: 1 });
    await fake.contactReacts(m, "question", { balloon: true });
    expect(only("new-message")).toEqual([
      { ...empty, reactions: [{ phone, targetNetworkId: m.guid, reaction: "love", remove: false, at: t1.dateCreated }] },
      { ...empty, reactions: [{ phone, targetNetworkId: m.guid, reaction: "love", remove: true, at: expect.any(Number) }] },
      { ...empty, reactions: [{ phone, targetNetworkId: m.guid, reaction: "question", remove: false, at: expect.any(Number) }] },
    ]);
  });

  test("tapbacks Textwire does not know (an emoji tapback '2006', a sticker) are skipped with a debug line; a group's names its chat", async () => {
    const phone = newPhone();
    const m = await theirs(phone);
    await fake.contactReacts(m, "2006");
    await fake.contactReacts(m, "sticker");
    const group = fake.addGroup([phone, newPhone()]);
    await fake.emit("new-message", { ...bbMessage({ address: phone, text: "Liked “x”", associatedMessageType: "like", associatedMessageGuid: `p:0/${m.guid}`, chatGuid: group.guid }) });
    expect(only("new-message")).toEqual([
      empty,
      empty,
      { ...empty, reactions: [{ phone, chat: group.guid, targetNetworkId: m.guid, reaction: "like", remove: false, at: expect.any(Number) }] },
    ]);
    expect(debug.filter((d) => d.msg === "bluebubbles: tapback skipped").map((d) => d.type)).toEqual(["2006", "sticker"]);
  });

  test("typing-indicator {display, guid} → the contact typing or not", async () => {
    const phone = newPhone();
    await fake.contactTypes(phone, true);
    await fake.contactTypes(phone, false);
    expect(only("typing-indicator")).toEqual([
      { ...empty, typing: [{ phone, typing: true }] },
      { ...empty, typing: [{ phone, typing: false }] },
    ]);
  });

  test("updated-message with dateRead on our message (no chats key) → a read receipt, with its report", async () => {
    const phone = newPhone();
    const m = await ours(phone);
    const read = await fake.contactReads(m);
    const [events] = only("updated-message");
    expect(events!.reads).toEqual([{ networkId: m.guid, at: read.dateRead! }]);
    expect(events!.inbound).toEqual([]);
    expect(events!.statuses.map((s) => s.networkId)).toEqual([m.guid]);
  });

  test("updated-message with a newer dateEdited on their message → an edit with its text; no text and no parts → an unsend", async () => {
    const phone = newPhone();
    const m = await theirs(phone);
    const editedAt = (await fake.contactEdits(m, "Running very late")).dateEdited!;
    const unsentAt = (await fake.contactUnsends(m)).dateEdited!;
    expect(unsentAt).toBeGreaterThan(editedAt);
    expect(only("updated-message")).toEqual([
      { ...empty, edits: [{ networkId: m.guid, phone, kind: "edit", message: "Running very late", at: editedAt }] },
      { ...empty, edits: [{ networkId: m.guid, phone, kind: "unsend", at: unsentAt }] },
    ]);
  });

  test("a change announced late as new-message (after the server's hour): the edit and the read still apply; the message itself repeats for the guid dedupe", async () => {
    const phone = newPhone();
    const mine = await ours(phone);
    const m = await theirs(phone);
    const read = await fake.contactReads(mine, { late: true });
    const edited = await fake.contactEdits(m, "Later text", { late: true });
    const [readEvents, editEvents] = only("new-message");
    expect(readEvents!.reads).toEqual([{ networkId: mine.guid, at: read.dateRead! }]);
    expect(editEvents!.edits).toEqual([{ networkId: m.guid, phone, kind: "edit", message: "Later text", at: edited.dateEdited! }]);
    expect(editEvents!.inbound.map((i) => i.networkId)).toEqual([m.guid]);
  });
});
