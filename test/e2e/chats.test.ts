// Group chats on the loopback network (docs/api.md "Chats"): group messages land in one chat
// with their senders, stay out of one-to-one history and the default poll, and come in
// `chats=all` polls under the same cursor; sends name a phone or a chat, exactly one.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectBadField, expectError, history, inbound, newPhone, poll, send, type HistoryResult, type SendResult } from "./api";
import { startServer, type Server } from "./harness";

setDefaultTimeout(60_000);

interface Chat {
  id: string;
  kind: "direct" | "group";
  name: string | null;
  participants: string[];
  created_at: string;
  last_message_at: string | null;
}

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
