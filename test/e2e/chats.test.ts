// Group chats on the loopback network (docs/api.md "Chats"): group messages land in one chat
// with their senders, stay out of one-to-one history and the default poll, and come in
// `chats=all` polls under the same cursor; sends name a phone or a chat, exactly one.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, type Chat, expectBadField, expectError, history, type HistoryResult, inbound, newPhone, poll, send, type SendResult } from "./api";
import { startServer, type Server } from "./harness";
import { startFakeOpenAI } from "../support/fake-openai";
import { startFakeTwilio, twilioEnv } from "../support/fake-twilio";

setDefaultTimeout(60_000);


/** A message from `phone` in the loopback group `chat`. */
async function groupInbound(server: Server, chat: { id: string; name?: string; participants: string[] }, phone: string, message: string): Promise<SendResult> {
  const reply = await call<SendResult>(server, "POST", "/webhooks/loopback", { body: { phone, message, chat } });
  expect(reply.status).toBe(200);
  return reply.body;
}

describe("a group of two people on the loopback network", () => {
  let server: Server;
  const ann = newPhone();
  const bob = newPhone();
  const family = { id: `family-${Date.now()}`, name: "Family", participants: [ann, bob] };
  const direct: SendResult[] = [];
  const group: SendResult[] = [];
  let groupId = "";

  beforeAll(async () => {
    server = await startServer();
    direct.push(await inbound(server, ann, "hi, just me"));
    group.push(await groupInbound(server, family, ann, "hello all"));
    direct.push(await inbound(server, bob, "hi from bob alone"));
    group.push(await groupInbound(server, family, bob, "hi ann"));
    const chats = await call<{ chats: Chat[]; total: number }>(server, "GET", "/api/chats?kind=group");
    groupId = chats.body.chats.find((c) => c.name === "Family")!.id;
  }, 60_000);
  afterAll(() => server?.kill());

  test("both messages are in one group chat, each with its sender", async () => {
    const chat = await call<{ chat: Chat }>(server, "GET", `/api/chats/${groupId}`);
    expect(chat.status).toBe(200);
    expect(chat.body.chat).toMatchObject({ id: groupId, kind: "group", name: "Family", participants: [ann, bob] });
    expect(chat.body.chat.id).toMatch(/^grp_[0-9a-f]{32}$/);
    const page = await call<HistoryResult>(server, "GET", `/api/chats/${groupId}/messages`);
    expect(page.body.total).toBe(2);
    expect(page.body.messages.map((m) => [m.id, m.phone, m.message, (m as { chat_id?: string }).chat_id])).toEqual([
      [group[1]!.message_id, bob, "hi ann", groupId],
      [group[0]!.message_id, ann, "hello all", groupId],
    ]);
  });

  test("neither person's one-to-one history has a group message", async () => {
    for (const [phone, own] of [[ann, direct[0]!], [bob, direct[1]!]] as const) {
      const h = await history(server, phone);
      expect(h.total).toBe(1);
      expect(h.messages.map((m) => m.id)).toEqual([own.message_id]);
      expect((h.messages[0] as { chat_id?: string }).chat_id).toBe(`dm_${phone.slice(1)}`);
    }
  });

  test("the default poll has only the direct messages; chats=all has all four in order, under one cursor", async () => {
    expect((await poll(server)).messages.map((m) => m.id)).toEqual(direct.map((d) => d.message_id));
    const all = await poll(server, { chats: "all" });
    const order = [direct[0]!, group[0]!, direct[1]!, group[1]!].map((s) => s.message_id);
    expect(all.messages.map((m) => m.id)).toEqual(order);
    const after = await poll(server, { chats: "all", since: all.messages[1]!.timestamp, limit: 1 });
    expect(after).toMatchObject({ count: 1, has_more: true });
    expect(after.messages[0]!.id).toBe(order[2]!);
    expectBadField(await call(server, "GET", "/api/messages/poll?chats=some"), "chats");
  });

  test("GET /api/chats lists direct and group chats, latest activity first, by kind", async () => {
    const all = await call<{ chats: Chat[]; total: number; limit: number; offset: number }>(server, "GET", "/api/chats");
    expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(all.body.chats.map((c) => c.id)).toEqual([groupId, `dm_${bob.slice(1)}`, `dm_${ann.slice(1)}`]);
    expect(all.body.chats[1]).toMatchObject({ kind: "direct", name: null, participants: [bob] });
    const direct = await call<{ chats: Chat[]; total: number }>(server, "GET", "/api/chats?kind=direct&limit=1&offset=1");
    expect(direct.body.total).toBe(2);
    expect(direct.body.chats.map((c) => c.id)).toEqual([`dm_${ann.slice(1)}`]);
    expectBadField(await call(server, "GET", "/api/chats?kind=channel"), "kind");
    expectError(await call(server, "GET", "/api/chats/grp_00000000000000000000000000000000"), 404, "NOT_FOUND");
  });

  test("a send with chat_id goes into the group: phone null, its chat_id; a direct chat's id sends to its contact", async () => {
    const sent = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: groupId, message: "dinner at 8" } });
    expect(sent.status).toBe(200);
    const page = await call<HistoryResult>(server, "GET", `/api/chats/${groupId}/messages?limit=1`);
    expect(page.body.messages[0]).toMatchObject({ id: sent.body.message_id, phone: null, direction: "outbound", status: "delivered", chat_id: groupId });
    expect((await history(server, ann)).total).toBe(1);

    const toAnn = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: `dm_${ann.slice(1)}`, message: "just you" } });
    expect(toAnn.status).toBe(200);
    expect((await history(server, ann)).messages[0]).toMatchObject({ id: toAnn.body.message_id, phone: ann, chat_id: `dm_${ann.slice(1)}` });

    const reply = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: groupId, message: "re", reply_to: group[0]!.message_id } });
    expect(reply.status).toBe(200);
    expectBadField(await call(server, "POST", "/api/send", { body: { chat_id: groupId, message: "re", reply_to: direct[0]!.message_id } }), "reply_to");
  });

  test("a send names exactly one of phone and chat_id (400 naming both), and an unknown chat is 400", async () => {
    for (const body of [{ message: "x" }, { phone: ann, chat_id: groupId, message: "x" }]) {
      const e = expectError(await call(server, "POST", "/api/send", { body }), 400, "BAD_REQUEST");
      expect(e.error.message).toContain("phone");
      expect(e.error.message).toContain("chat_id");
    }
    expectBadField(await call(server, "POST", "/api/send", { body: { chat_id: "grp_00000000000000000000000000000000", message: "x" } }), "chat_id");
    expectBadField(await call(server, "POST", "/api/send", { body: { chat_id: "no such/id", message: "x" } }), "chat_id");
  });

  test("a chat's unread counts its inbound messages not read (a direct chat's: its contact's); reading one chat leaves the others", async () => {
    const unread = async () =>
      Object.fromEntries((await call<{ chats: Chat[] }>(server, "GET", "/api/chats")).body.chats.map((c) => [c.id, c.unread]));
    const [annChat, bobChat] = [`dm_${ann.slice(1)}`, `dm_${bob.slice(1)}`];
    expect(await unread()).toEqual({ [groupId]: 2, [annChat]: 1, [bobChat]: 1 });
    const read = await call<{ chat: Chat }>(server, "POST", `/api/chats/${groupId}/read`);
    expect(read.status).toBe(200);
    expect(read.body.chat).toMatchObject({ id: groupId, unread: 0 });
    expect(await unread()).toEqual({ [groupId]: 0, [annChat]: 1, [bobChat]: 1 });
    expect((await call<{ chat: Chat }>(server, "POST", `/api/chats/${annChat}/read`)).body.chat.unread).toBe(0);
    expect((await call<{ contact: { unread: number } }>(server, "GET", `/api/contacts/${encodeURIComponent(ann)}`)).body.contact.unread).toBe(0);
    expect((await call<{ chat: Chat }>(server, "GET", `/api/chats/${bobChat}`)).body.chat.unread).toBe(1);
  });
});

test("a direct send still answers as the spec says (no chat in the way)", async () => {
  const server = await startServer();
  try {
    const phone = newPhone();
    const sent = await send(server, phone, "hello");
    const h = await history(server, phone);
    expect(h.messages[0]).toMatchObject({ id: sent.message_id, phone, chat_id: `dm_${phone.slice(1)}` });
  } finally {
    server.kill();
  }
});

describe("groups on the loopback network: create, change, act in, and STOP", () => {
  let server: Server;
  const model = startFakeOpenAI({ kind: "text", text: "Sounds good!" });
  const [ann, bob, cat] = [newPhone(), newPhone(), newPhone()];
  let chat: Chat;

  beforeAll(async () => {
    server = await startServer({ env: { OPENAI_API_KEY: "sk-local-test", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "tiny-test-model" } });
    const made = await call<{ chat: Chat; message: { id: string; chat_id: string; phone: string | null; status: string } }>(server, "POST", "/api/chats", {
      body: { participants: [ann, bob], name: "Trip", message: "Who's in?" },
    });
    expect(made.status).toBe(201);
    chat = made.body.chat;
    expect(made.body.message).toMatchObject({ chat_id: chat.id, phone: null, status: "delivered" });
  }, 60_000);
  afterAll(async () => {
    server?.kill();
    await model.stop();
  });

  test("POST /api/chats with an Idempotency-Key: a retry answers the same group and creates no other", async () => {
    const [x, y] = [newPhone(), newPhone()];
    const create = (message: string) =>
      call<{ chat: Chat; message: { id: string } }>(server, "POST", "/api/chats", { body: { participants: [x, y], message }, headers: { "Idempotency-Key": `group-${x}` } });
    const first = await create("Hello both");
    const again = await create("Hello both");
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const groups = (await call<{ chats: Chat[] }>(server, "GET", "/api/chats?kind=group&limit=100")).body.chats;
    expect(groups.filter((c) => c.participants.includes(x))).toHaveLength(1);
    expectError(await create("Another text"), 409, "CONFLICT");
  });

  test("POST /api/chats answers 201 with the named group; renames and participants change it, each a chat.updated event", async () => {
    expect(chat).toMatchObject({ kind: "group", name: "Trip", participants: [ann, bob] });
    expect((await call<{ chat: Chat }>(server, "PATCH", `/api/chats/${chat.id}`, { body: { name: "Road trip" } })).body.chat.name).toBe("Road trip");
    expect((await call<{ chat: Chat }>(server, "POST", `/api/chats/${chat.id}/participants`, { body: { phone: cat } })).body.chat.participants).toEqual([ann, bob, cat]);
    // The + of a path phone arrives raw or percent-encoded.
    expect((await call<{ chat: Chat }>(server, "DELETE", `/api/chats/${chat.id}/participants/${cat}`)).body.chat.participants).toEqual([ann, bob]);
    expectError(await call(server, "DELETE", `/api/chats/${chat.id}/participants/${encodeURIComponent(cat)}`), 404, "NOT_FOUND");
    // The loopback webhook's `chat` alone is the group as the network has it now.
    await call(server, "POST", "/webhooks/loopback", { body: { phone: ann, chat: { id: "never-seen", name: "Other", participants: [ann, bob] } } });
    const events = await call<{ events: { type: string; data: Chat }[] }>(server, "GET", "/api/events?type=chat.updated");
    // Named once created (the network's chat/new takes no name), then renamed; a group first seen in a report is no change.
    expect(events.body.events.map((e) => [e.data.id, e.data.name, e.data.participants])).toEqual([
      [chat.id, "Trip", [ann, bob]],
      [chat.id, "Road trip", [ann, bob]],
      [chat.id, "Road trip", [ann, bob, cat]],
      [chat.id, "Road trip", [ann, bob]],
    ]);
    // The chat as the change left it; the unread count is the reader's (GET /api/chats/{id}), not the change's.
    for (const e of events.body.events) expect(Object.keys(e.data).sort()).toEqual(["created_at", "human_until", "id", "kind", "last_message_at", "mode", "muted", "name", "participants", "previous_mode"]);
    expectError(await call(server, "PATCH", `/api/chats/dm_${ann.slice(1)}`, { body: { name: "x" } }), 404, "NOT_FOUND");
    await send(server, ann, "direct");
    expectError(await call(server, "PATCH", `/api/chats/dm_${ann.slice(1)}`, { body: { name: "x" } }), 409, "CONFLICT");
    expectBadField(await call(server, "PATCH", `/api/chats/${chat.id}`, { body: { name: "" } }), "name");
  });

  test("reactions, typing, read, replies, scheduled sends and Idempotency-Key work in the group", async () => {
    const theirs = (await call<SendResult>(server, "POST", "/webhooks/loopback", { body: { phone: bob, message: "me!", chat: { id: "loopback:chat:x", participants: [ann] } } })).body;
    // Another group (the network's id differs): the message is not in ours.
    expect((await call<{ messages: { id: string }[] }>(server, "GET", `/api/chats/${chat.id}/messages`)).body.messages.map((m) => m.id)).not.toContain(theirs.message_id);
    const inOurs = await call<{ messages: { id: string; phone: string }[] }>(server, "GET", `/api/chats/${chat.id}/messages`);
    const first = inOurs.body.messages.at(-1)!;
    const reacted = await call<{ message: { reactions: { reaction: string }[] } }>(server, "POST", `/api/messages/${first.id}/reactions`, { body: { reaction: "love" } });
    expect(reacted.body.message.reactions.map((r) => r.reaction)).toEqual(["love"]);
    expect((await call<{ typing: boolean }>(server, "POST", `/api/chats/${chat.id}/typing`)).body.typing).toBe(true);
    expect((await call<{ typing: boolean }>(server, "DELETE", `/api/chats/${chat.id}/typing`)).body.typing).toBe(false);
    expect((await call(server, "POST", `/api/chats/${chat.id}/read`)).status).toBe(200);
    const reply = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: chat.id, message: "re", reply_to: first.id } });
    expect(reply.status).toBe(200);
    const key = { "Idempotency-Key": `grp-${Date.now()}` };
    const once = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: chat.id, message: "once" }, headers: key });
    const again = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: chat.id, message: "once" }, headers: key });
    expect(again.body.message_id).toBe(once.body.message_id);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await call<SendResult & { status: string }>(server, "POST", "/api/send", { body: { chat_id: chat.id, message: "later", send_at: later } });
    expect(scheduled.body.status).toBe("scheduled");
    const waiting = await call<{ messages: { id: string; chat_id: string; phone: string | null }[] }>(server, "GET", "/api/messages/scheduled");
    expect(waiting.body.messages.find((m) => m.id === scheduled.body.message_id)).toMatchObject({ chat_id: chat.id, phone: null });
  });

  test("STOP from a participant opts them out and mutes generate auto_send into the group until they send START; API sends still go", async () => {
    const group = { id: "loopback:stop", name: "Stop test", participants: [ann, bob] };
    await call(server, "POST", "/webhooks/loopback", { body: { phone: ann, message: "hello", chat: group } });
    const stopChat = (await call<{ chats: Chat[] }>(server, "GET", "/api/chats?kind=group")).body.chats.find((c) => c.name === "Stop test")!;
    const isMuted = async () => (await call<{ chat: { muted: boolean } }>(server, "GET", `/api/chats/${stopChat.id}`)).body.chat.muted;
    expect(await isMuted()).toBe(false);
    const generate = () => call<{ sent: boolean }>(server, "POST", "/api/generate", { body: { chat_id: stopChat.id, context: [{ role: "user", content: "hi" }], auto_send: true } });
    expect((await generate()).body.sent).toBe(true);

    await call(server, "POST", "/webhooks/loopback", { body: { phone: bob, message: "STOP", chat: group } });
    expect((await call<{ contact: { opted_out: boolean } }>(server, "GET", `/api/contacts/${encodeURIComponent(bob)}`)).body.contact.opted_out).toBe(true);
    const before = model.requests.length;
    expect(await isMuted()).toBe(true);
    const muted = expectError(await generate(), 403, "FORBIDDEN");
    expect(muted.error.message).toContain("chat_id");
    expect(model.requests.length).toBe(before);
    // Without auto_send nothing is sent: the generation is still written.
    expect((await call<{ sent: boolean }>(server, "POST", "/api/generate", { body: { chat_id: stopChat.id, context: [{ role: "user", content: "hi" }] } })).body.sent).toBe(false);
    expect((await call(server, "POST", "/api/send", { body: { chat_id: stopChat.id, message: "an API send still goes" } })).status).toBe(200);
    // START from someone else does not lift it; from bob it does.
    await call(server, "POST", "/webhooks/loopback", { body: { phone: ann, message: "START", chat: group } });
    expectError(await generate(), 403, "FORBIDDEN");
    expect(await isMuted()).toBe(true);
    await call(server, "POST", "/webhooks/loopback", { body: { phone: bob, message: "START", chat: group } });
    expect(await isMuted()).toBe(false);
    expect((await generate()).body.sent).toBe(true);
  });
});

test("a network without groups (Twilio) answers 422 to group requests, naming the field", async () => {
  const fake = startFakeTwilio();
  const server = await startServer({ env: twilioEnv(fake) });
  try {
    const e = expectError(await call(server, "POST", "/api/chats", { body: { participants: [newPhone(), newPhone()], message: "hi" } }), 422, "UNPROCESSABLE_CONTENT");
    expect(e.error.message).toBe("participants: the twilio network cannot do group chats (line default)");
    expect((await call<{ network: { capabilities: { groups: boolean } } }>(server, "GET", "/api/network")).body.network.capabilities.groups).toBe(false);
    expect((await call<{ total: number }>(server, "GET", "/api/chats?kind=group")).body.total).toBe(0);
  } finally {
    server.kill();
    await fake.stop();
  }
});

test("the OpenAPI document has the chat routes with their answers, the record's chat_id, and exactly one of phone and chat_id on send", async () => {
  const server = await startServer();
  try {
    const doc = (await call<{ paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } }>(server, "GET", "/openapi.json")).body;
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    for (const route of [
      "GET /api/chats",
      "POST /api/chats",
      "GET /api/chats/{id}",
      "PATCH /api/chats/{id}",
      "GET /api/chats/{id}/messages",
      "POST /api/chats/{id}/participants",
      "DELETE /api/chats/{id}/participants/{phone}",
      "POST /api/chats/{id}/typing",
      "DELETE /api/chats/{id}/typing",
      "POST /api/chats/{id}/read",
    ]) expect(routes).toContain(route);
    expect(Object.keys(doc.paths["/api/chats"]!.post.responses)).toContain("201");
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["Chat", "ChatUpdatedEvent"]));
    const message = doc.components.schemas.Message;
    expect(message.required).toContain("chat_id");
    expect(message.properties.phone.type).toEqual(expect.arrayContaining(["string", "null"]));
    const send = doc.paths["/api/send"]!.post.requestBody.content["application/json"].schema;
    expect(send.oneOf).toEqual([{ required: ["phone"] }, { required: ["chat_id"] }]);
  } finally {
    server.kill();
  }
});
