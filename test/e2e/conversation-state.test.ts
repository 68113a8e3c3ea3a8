// Reactions, typing, read state, edits and unsends (CONTRACT §14, docs/api.md) over real
// HTTP on the loopback network, whose webhook plays the contact: tapbacks (and SMS reaction
// texts) land on our message, are pushed as events and never polled; ours show in history;
// typing, read receipts, marking read, edits and unsends change the record once. Twilio,
// which can do none of it, answers 422 with nothing changed. Both dialects (TEST_DIALECT).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "../../src/client";
import { startReceiver, type Receiver } from "../support/webhook-receiver";
import {
  TEST_FROM,
  TEST_PUBLIC_URL,
  postTwilioWebhook,
  signTwilioRequest,
  startFakeTwilio,
  twilioEnv,
  twilioInboundParams,
  twilioSid,
  type FakeTwilio,
} from "../support/fake-twilio";
import { call, expectBadField, expectError, history, inbound, newPhone, poll, send, trpcFailure, type MessageRecord, type Reply } from "./api";
import { startServer, waitFor, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

interface Reaction {
  reaction: string;
  direction: "inbound" | "outbound";
  phone: string | null;
  timestamp: string;
}
type Message = MessageRecord & { reactions: Reaction[]; read_at: string | null; edited_at: string | null; unsent_at: string | null };
interface EventRecord {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}
interface Contact {
  phone: string;
  opted_out: boolean;
  unread: number;
  typing: boolean;
}

let server: Server;
let receiver: Receiver;
beforeAll(async () => {
  receiver = startReceiver();
  server = await startServer({ env: { ALLOW_PRIVATE_URLS: "true" } });
  const endpoint = await call<{ endpoint: { secret: string } }>(server, "POST", "/api/webhook-endpoints", { body: { url: receiver.url } });
  expect(endpoint.status).toBe(201);
  receiver.secret = endpoint.body.endpoint.secret;
}, 60_000);
afterAll(() => {
  server?.kill();
  receiver?.stop();
});

/** POST /webhooks/loopback: what the contact does. */
function contact<T = { success: boolean; message: Message }>(body: Record<string, unknown>): Promise<Reply<T>> {
  return call<T>(server, "POST", "/webhooks/loopback", { body });
}

function ok<T>(reply: Reply<T>, what: string): T {
  if (reply.status !== 200) throw new Error(`${what}: expected 200, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply.body;
}

async function recordOf(phone: string, id: string): Promise<Message> {
  const found = (await history(server, phone)).messages.find((m) => m.id === id);
  if (!found) throw new Error(`message ${id} not in the history of ${phone}`);
  return found as Message;
}

async function events(type: string): Promise<EventRecord[]> {
  const reply = await call<{ events: EventRecord[] }>(server, "GET", `/api/events?${new URLSearchParams({ type, limit: "100" })}`);
  return ok(reply, "GET /api/events").events;
}

/** The events of `type` about message `id`. */
const eventsOf = async (type: string, id: string) => (await events(type)).filter((e) => e.data.id === id);

/** The receiver got this event, signed (bounded wait). */
async function pushed(event: EventRecord): Promise<void> {
  const got = await waitFor(`event ${event.type} pushed`, 15_000, () => receiver.received.find((r) => r.headers["webhook-id"] === event.id));
  expect(got.verified).toBe(true);
  // A message event's record is as it is when delivered; typing's data is all it carries.
  expect(JSON.parse(got.body)).toMatchObject({ type: event.type, data: event.type === "contact.typing" ? event.data : { id: event.data.id } });
}

async function getContact(phone: string): Promise<Contact> {
  return ok(await call<{ contact: Contact }>(server, "GET", `/api/contacts/${encodeURIComponent(phone)}`), "GET /api/contacts").contact;
}

test("GET /api/network: the loopback network can do everything, group chats included", async () => {
  const body = ok(await call(server, "GET", "/api/network"), "GET /api/network");
  expect(body).toEqual({
    success: true,
    network: { name: "loopback", capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true } },
  });
});

describe("the contact's reactions", () => {
  test("a tapback lands on our message, is an event pushed signed, and is never polled", async () => {
    const phone = newPhone();
    const ours = await send(server, phone, "Your order has shipped.");
    const answer = ok(await contact({ phone, reaction: { message_id: ours.message_id, reaction: "love" } }), "reaction");
    expect(answer.message.id).toBe(ours.message_id);
    expect(answer.message.reactions).toEqual([{ reaction: "love", direction: "inbound", phone, timestamp: expect.any(String) }]);
    const record = await recordOf(phone, ours.message_id);
    expect(record.reactions.map((r) => [r.reaction, r.direction, r.phone])).toEqual([["love", "inbound", phone]]);
    expect((await history(server, phone)).total).toBe(1);
    expect((await poll(server, { phone })).count).toBe(0);
    const [event] = await eventsOf("message.reaction_added", ours.message_id);
    expect(event!.data.reaction).toEqual({ reaction: "love", direction: "inbound", phone });
    await pushed(event!);

    // A new one replaces theirs; its removal takes it off (once).
    ok(await contact({ phone, reaction: { message_id: ours.message_id, reaction: "laugh" } }), "second reaction");
    expect((await recordOf(phone, ours.message_id)).reactions.map((r) => r.reaction)).toEqual(["laugh"]);
    ok(await contact({ phone, reaction: { message_id: ours.message_id, reaction: "laugh", remove: true } }), "removal");
    ok(await contact({ phone, reaction: { message_id: ours.message_id, reaction: "laugh", remove: true } }), "removal again");
    expect((await recordOf(phone, ours.message_id)).reactions).toEqual([]);
    expect(await eventsOf("message.reaction_removed", ours.message_id)).toHaveLength(1);
  });

  test("an SMS `Loved “…”` quoting our text is the same reaction, not a message", async () => {
    const phone = newPhone();
    const ours = await send(server, phone, "See you at 9?");
    const answer = ok(await contact<{ success: boolean; message_id: string }>({ phone, message: "Loved “See you at 9?”" }), "reaction text");
    expect(answer.message_id).toBe(ours.message_id);
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expect((messages[0] as Message).reactions.map((r) => [r.reaction, r.direction, r.phone])).toEqual([["love", "inbound", phone]]);
    expect((await poll(server, { phone })).count).toBe(0);
    const [event] = await eventsOf("message.reaction_added", ours.message_id);
    await pushed(event!);
  });

  test("a reaction text quoting something we never sent stays a message", async () => {
    const phone = newPhone();
    await send(server, phone, "See you at 9?");
    const got = await inbound(server, phone, "Liked “See you at 10?”");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(2);
    expect(messages.find((m) => m.id === got.message_id)?.message).toBe("Liked “See you at 10?”");
    expect((await poll(server, { phone })).messages.map((m) => m.id)).toEqual([got.message_id]);
  });
});

describe("our reactions", () => {
  test("POST shows in history and replaces ours; DELETE takes it off; the contact's stays", async () => {
    const phone = newPhone();
    const theirs = await inbound(server, phone, "I got the job!", `net-${crypto.randomUUID()}`);
    ok(await contact({ phone, reaction: { message_id: theirs.message_id, reaction: "emphasize" } }), "their own reaction");
    const path = `/api/messages/${theirs.message_id}/reactions`;
    const first = ok(await call<{ success: boolean; message: Message }>(server, "POST", path, { body: { reaction: "love" } }), "react");
    expect(first.message.reactions.find((r) => r.direction === "outbound")).toMatchObject({ reaction: "love", phone: null });
    ok(await call(server, "POST", path, { body: { reaction: "like" } }), "react again");
    const record = await recordOf(phone, theirs.message_id);
    expect(record.reactions.map((r) => [r.reaction, r.direction])).toEqual([
      ["emphasize", "inbound"],
      ["like", "outbound"],
    ]);
    const removed = ok(await call<{ success: boolean; message: Message }>(server, "DELETE", path), "unreact");
    expect(removed.message.reactions.map((r) => r.direction)).toEqual(["inbound"]);
    expect((await eventsOf("message.reaction_added", theirs.message_id)).map((e) => (e.data.reaction as Reaction).reaction)).toEqual(["emphasize", "love", "like"]);
    expect((await eventsOf("message.reaction_removed", theirs.message_id)).map((e) => e.data.reaction)).toEqual([{ reaction: "like", direction: "outbound", phone: null }]);
  });

  test("an unknown reaction is 400 naming it; an unknown id is 404 for every action", async () => {
    const ours = await send(server, newPhone(), "hi");
    expectBadField(await call(server, "POST", `/api/messages/${ours.message_id}/reactions`, { body: { reaction: "wow" } }), "reaction");
    const id = crypto.randomUUID();
    expectError(await call(server, "POST", `/api/messages/${id}/reactions`, { body: { reaction: "love" } }), 404, "NOT_FOUND");
    expectError(await call(server, "DELETE", `/api/messages/${id}/reactions`), 404, "NOT_FOUND");
    expectError(await call(server, "POST", `/api/messages/${id}/edit`, { body: { message: "new" } }), 404, "NOT_FOUND");
    expectError(await call(server, "POST", `/api/messages/${id}/unsend`), 404, "NOT_FOUND");
  });
});

describe("typing", () => {
  test("ours starts and stops", async () => {
    const path = `/api/contacts/${encodeURIComponent(newPhone())}/typing`;
    expect(ok(await call(server, "POST", path), "start typing")).toEqual({ success: true, typing: true });
    expect(ok(await call(server, "DELETE", path), "stop typing")).toEqual({ success: true, typing: false });
  });

  test("the contact's shows in GET /api/contacts/:phone, as events contact.typing, and is no message", async () => {
    const phone = newPhone();
    expect((await getContact(phone)).typing).toBe(false);
    expect(ok(await contact<unknown>({ phone, typing: true }), "typing on")).toEqual({ success: true, typing: true });
    expect((await getContact(phone)).typing).toBe(true);
    ok(await contact({ phone, typing: true }), "typing on again");
    ok(await contact({ phone, typing: false }), "typing off");
    expect((await getContact(phone)).typing).toBe(false);
    const mine = (await events("contact.typing")).filter((e) => e.data.phone === phone);
    expect(mine.map((e) => e.data)).toEqual([
      { phone, typing: true },
      { phone, typing: false },
    ]);
    await pushed(mine[0]!);
    expect((await history(server, phone)).total).toBe(0);
  });

  test("the contact's message ends their typing", async () => {
    const phone = newPhone();
    ok(await contact({ phone, typing: true }), "typing on");
    expect((await getContact(phone)).typing).toBe(true);
    ok(await contact({ phone, message: "here it is" }), "their message");
    expect((await getContact(phone)).typing).toBe(false);
  });
});

describe("read state", () => {
  test("a read receipt sets read_at on that message and our earlier ones, with message.read; delivered stays", async () => {
    const phone = newPhone();
    const a = await send(server, phone, "one");
    const b = await send(server, phone, "two");
    const answer = ok(await contact({ phone, read: { message_id: b.message_id } }), "read receipt");
    expect(answer.message.read_at).toEqual(expect.any(String));
    for (const id of [a.message_id, b.message_id]) {
      const record = await recordOf(phone, id);
      expect(record.read_at).toEqual(expect.any(String));
      expect(record.status).toBe("delivered");
      expect(await eventsOf("message.read", id)).toHaveLength(1);
    }
    ok(await contact({ phone, read: { message_id: b.message_id } }), "read receipt again");
    expect(await eventsOf("message.read", b.message_id)).toHaveLength(1);
  });

  test("POST /api/contacts/:phone/read zeroes unread and reads their messages", async () => {
    const phone = newPhone();
    const got = await inbound(server, phone, "are you there?");
    await inbound(server, phone, "hello?");
    expect((await getContact(phone)).unread).toBe(2);
    const marked = ok(await call<{ contact: Contact }>(server, "POST", `/api/contacts/${encodeURIComponent(phone)}/read`), "mark read");
    expect(marked.contact).toMatchObject({ phone, unread: 0, typing: false });
    expect((await getContact(phone)).unread).toBe(0);
    expect((await recordOf(phone, got.message_id)).read_at).toEqual(expect.any(String));
  });
});

describe("edits and unsends", () => {
  test("the contact's edit and unsend change the record once", async () => {
    const phone = newPhone();
    const id = `net-${crypto.randomUUID()}`;
    const got = await inbound(server, phone, "See you at 9", id);
    const edited = ok(await contact({ phone, edit: { id, message: "See you at 10" } }), "edit");
    expect(edited.message).toMatchObject({ id: got.message_id, message: "See you at 10", edited_at: expect.any(String) });
    ok(await contact({ phone, edit: { id, message: "See you at 10" } }), "edit again");
    const [event, ...more] = await eventsOf("message.edited", got.message_id);
    expect(more).toEqual([]);
    expect(event!.data.previous_message).toBe("See you at 9");
    await pushed(event!);

    const unsent = ok(await contact({ phone, unsend: { id } }), "unsend");
    expect(unsent.message).toMatchObject({ message: "", unsent_at: expect.any(String) });
    ok(await contact({ phone, unsend: { id } }), "unsend again");
    expect(await eventsOf("message.unsent", got.message_id)).toHaveLength(1);
    expect((await poll(server, { phone })).count).toBe(1);
  });

  test("ours: edited up to 5 times, then 409; unsent once, then 409; theirs never", async () => {
    const phone = newPhone();
    const ours = await send(server, phone, "Meet at 9");
    for (let n = 1; n <= 5; n++) {
      const reply = ok(await call<{ message: Message }>(server, "POST", `/api/messages/${ours.message_id}/edit`, { body: { message: `Meet at ${9 + n}` } }), `edit ${n}`);
      expect(reply.message).toMatchObject({ message: `Meet at ${9 + n}`, edited_at: expect.any(String) });
    }
    const sixth = expectError(await call(server, "POST", `/api/messages/${ours.message_id}/edit`, { body: { message: "Meet at 3" } }), 409, "CONFLICT");
    expect(sixth.error.message).toContain("edited 5 times");
    expect((await recordOf(phone, ours.message_id)).message).toBe("Meet at 14");
    expect(await eventsOf("message.edited", ours.message_id)).toHaveLength(5);

    const unsent = ok(await call<{ message: Message }>(server, "POST", `/api/messages/${ours.message_id}/unsend`), "unsend");
    expect(unsent.message).toMatchObject({ message: "", unsent_at: expect.any(String) });
    expectError(await call(server, "POST", `/api/messages/${ours.message_id}/unsend`), 409, "CONFLICT");
    expect(await eventsOf("message.unsent", ours.message_id)).toHaveLength(1);

    const theirs = await inbound(server, phone, "ok");
    expectError(await call(server, "POST", `/api/messages/${theirs.message_id}/edit`, { body: { message: "not ours" } }), 409, "CONFLICT");
  });
});

test("ours past the windows: an edit 15 minutes after sending and an unsend 2 minutes after are 409, nothing changed", async () => {
  const phone = newPhone();
  const ours = await send(server, phone, "Meet at 9");
  // Sent 3 minutes ago (timestamps are unique µs: this one moves into a gap of its own).
  expect(await server.db.run("UPDATE messages SET timestamp = timestamp - 180000000 WHERE id = ?", ours.message_id)).toBe(1);
  const late = expectError(await call(server, "POST", `/api/messages/${ours.message_id}/unsend`), 409, "CONFLICT");
  expect(late.error.message).toBe(`message ${ours.message_id} cannot be unsent: it was sent more than 2 minutes ago`);
  ok(await call(server, "POST", `/api/messages/${ours.message_id}/edit`, { body: { message: "Meet at 10" } }), "edit within 15 minutes");
  expect(await server.db.run("UPDATE messages SET timestamp = timestamp - 780000000 WHERE id = ?", ours.message_id)).toBe(1);
  const later = expectError(await call(server, "POST", `/api/messages/${ours.message_id}/edit`, { body: { message: "Meet at 11" } }), 409, "CONFLICT");
  expect(later.error.message).toBe(`message ${ours.message_id} cannot be edited: it was sent more than 15 minutes ago`);
  expect(await recordOf(phone, ours.message_id)).toMatchObject({ message: "Meet at 10", unsent_at: null });
});

describe("the loopback webhook's combinations", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["nothing to do", {}, "message"],
    ["a message and typing", { message: "hi", typing: true }, "typing"],
    ["typing and a read receipt", { typing: true, read: { message_id: "x" } }, "read"],
    ["an id without a message", { typing: false, id: "net-1" }, "id"],
    ["typing as a string", { typing: "false" }, "typing"],
    ["an unknown reaction", { reaction: { message_id: "x", reaction: "wow" } }, "reaction.reaction"],
    ["a reaction to no message", { reaction: { message_id: "x", reaction: "love" } }, "reaction.message_id"],
    ["an edit of no message of theirs", { edit: { id: "net-none", message: "x" } }, "edit.id"],
  ];
  for (const [what, body, field] of cases) {
    test(`${what}: 400 naming ${field}`, async () => {
      expectBadField(await contact({ phone: newPhone(), ...body }), field);
    });
  }
});

test("the typed client calls each procedure", async () => {
  const tw = createClient({ url: server.url, apiKey: server.apiKey });
  const phone = newPhone();
  expect((await tw.network.get.query()).network.capabilities.reactions).toBe(true);
  const sent = await tw.messages.send.mutate({ phone, message: "via tRPC" });
  expect((await tw.messages.react.mutate({ id: sent.message_id, reaction: "like" })).message.reactions).toHaveLength(1);
  expect((await tw.messages.unreact.mutate({ id: sent.message_id })).message.reactions).toEqual([]);
  expect((await tw.messages.edit.mutate({ id: sent.message_id, message: "via tRPC, edited" })).message.message).toBe("via tRPC, edited");
  expect((await tw.messages.unsend.mutate({ id: sent.message_id })).message.unsent_at).not.toBeNull();
  expect(await tw.contacts.startTyping.mutate({ phone })).toEqual({ success: true, typing: true });
  expect(await tw.contacts.stopTyping.mutate({ phone })).toEqual({ success: true, typing: false });
  await tw.webhooks.loopback.mutate({ phone, message: "unread" });
  expect((await tw.contacts.get.query({ phone })).contact.unread).toBe(1);
  expect((await tw.contacts.markRead.mutate({ phone })).contact.unread).toBe(0);
  expect((await tw.conversations.list.query({ search: phone })).conversations[0]).toMatchObject({ phone, unread: 0 });
  expect(await trpcFailure(tw.messages.react.mutate({ id: crypto.randomUUID(), reaction: "like" }))).toMatchObject({ code: "NOT_FOUND" });
});

describe("on Twilio, which can do none of it", () => {
  let fake: FakeTwilio;
  let twilio: Server;
  beforeAll(async () => {
    fake = startFakeTwilio();
    twilio = await startServer({ env: twilioEnv(fake) });
  }, 60_000);
  afterAll(async () => {
    twilio?.kill();
    await fake?.stop();
  });

  test("GET /api/network says so; react, typing, edit and unsend are 422 naming the field, nothing changed; read is kept locally", async () => {
    const body = ok(await call<{ network: { name: string; capabilities: Record<string, boolean> } }>(twilio, "GET", "/api/network"), "network");
    expect(body.network).toEqual({
      name: "twilio",
      capabilities: { reactions: false, typing: false, read_receipts: false, edit: false, unsend: false, groups: false, media: true, threads: false },
    });
    const phone = newPhone();
    const sent = await send(twilio, phone, "Your order has shipped.");
    const requests = fake.requests.length;
    const refusals: [string, string, unknown, string][] = [
      ["POST", `/api/messages/${sent.message_id}/reactions`, { reaction: "love" }, "reaction: the twilio network cannot send reactions (line default)"],
      ["DELETE", `/api/messages/${sent.message_id}/reactions`, undefined, "reaction: the twilio network cannot send reactions (line default)"],
      ["POST", `/api/contacts/${encodeURIComponent(phone)}/typing`, undefined, "typing: the twilio network cannot show typing (line default)"],
      ["POST", `/api/messages/${sent.message_id}/edit`, { message: "Your order is out for delivery." }, "message: the twilio network cannot edit messages (line default)"],
      ["POST", `/api/messages/${sent.message_id}/unsend`, undefined, "unsend: the twilio network cannot unsend messages (line default)"],
    ];
    for (const [method, path, body, message] of refusals) {
      const e = expectError(await call(twilio, method, path, body === undefined ? {} : { body }), 422, "UNPROCESSABLE_CONTENT");
      expect(e.error.message).toBe(message);
    }
    const [record] = (await history(twilio, phone)).messages as Message[];
    expect(record).toMatchObject({ message: "Your order has shipped.", reactions: [], edited_at: null, unsent_at: null });
    expect(fake.requests.length).toBe(requests);

    const params = twilioInboundParams({ accountSid: fake.accountSid, from: phone, to: TEST_FROM, body: "thanks", messageSid: twilioSid("SM") });
    const path = "/webhooks/twilio";
    expect((await postTwilioWebhook(twilio.url, path, params, signTwilioRequest(fake.authToken, TEST_PUBLIC_URL + path, params))).status).toBe(200);
    expect(ok(await call<{ contact: Contact }>(twilio, "GET", `/api/contacts/${encodeURIComponent(phone)}`), "contact").contact.unread).toBe(1);
    const read = await call<{ contact: Contact }>(twilio, "POST", `/api/contacts/${encodeURIComponent(phone)}/read`);
    expect(ok(read, "mark read").contact).toMatchObject({ phone, unread: 0 });
  });
});
