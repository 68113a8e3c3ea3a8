// Group chats on BlueBubbles, against the stand-in (test/support/fake-bluebubbles.ts) over
// real HTTP with the real server: group messages from two people in one chat with their
// senders, kept out of one-to-one history and the default poll; sends into the group's chat
// guid; a group created with chat/new; renames and participants both ways, each pushing
// `chat.updated` to a webhook endpoint; a group change's `new-message` is no message.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { call, type Chat, expectError, history, type HistoryResult, type MessageRecord, newPhone, poll } from "./api";
import { startServer, waitUntil, type Server } from "./harness";
import { bbMessage, blueBubblesEnv, startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import { startReceiver, type Receiver } from "../support/webhook-receiver";

setDefaultTimeout(60_000);

type Record_ = MessageRecord & { chat_id: string; phone: string | null };

const SECRET = randomBytes(24).toString("base64url");
let fake: FakeBlueBubbles;
let server: Server;
let receiver: Receiver;

beforeAll(async () => {
  fake = startFakeBlueBubbles({ privateApi: true });
  server = await startServer({ env: { ...blueBubblesEnv(fake, SECRET), ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn" } });
  fake.webhooks.push(`${server.url}/webhooks/bluebubbles?secret=${SECRET}`);
  receiver = startReceiver();
  const endpoint = await call<{ endpoint: { secret: string } }>(server, "POST", "/api/webhook-endpoints", { body: { url: receiver.url, events: ["chat.updated"] } });
  expect(endpoint.status).toBe(201);
  receiver.secret = endpoint.body.endpoint.secret;
}, 60_000);
afterAll(async () => {
  server?.kill();
  receiver?.stop();
  await fake?.stop();
});

const chatsOf = async (kind = "group") => (await call<{ chats: Chat[] }>(server, "GET", `/api/chats?kind=${kind}`)).body.chats;
const chatByGuidName = async (name: string) => (await chatsOf()).find((c) => c.name === name);
const messagesOf = async (id: string) => (await call<HistoryResult>(server, "GET", `/api/chats/${id}/messages`)).body.messages as Record_[];
/** The chat.updated events the receiver got, verified, as their data. */
const pushed = () => receiver.received.filter((r) => r.verified).map((r) => JSON.parse(r.body) as { type: string; data: Chat });

describe("a group of two people on BlueBubbles", () => {
  const ann = newPhone();
  const bob = newPhone();
  let group: ReturnType<FakeBlueBubbles["addGroup"]>;
  let chat: Chat;
  const guids: string[] = [];

  beforeAll(async () => {
    group = fake.addGroup([ann, bob], "Climbing");
    for (const [from, text] of [[ann, "rope?"], [bob, "got it"]] as const) {
      const m = bbMessage({ address: from, text, chatGuid: group.guid });
      guids.push(m.guid);
      fake.messages.push(m);
      await fake.emit("new-message", m);
    }
    chat = (await waitUntil("the group chat", () => chatByGuidName("Climbing"), 10_000))!;
  });

  test("both messages land in one group chat with their senders; its participants were looked up (GET chat/:guid?with=participants)", async () => {
    expect(chat).toMatchObject({ kind: "group", name: "Climbing", participants: [ann, bob] });
    const lookups = fake.requests.filter((r) => r.method === "GET" && r.path === `/api/v1/chat/${encodeURIComponent(group.guid)}`);
    expect(lookups.length).toBeGreaterThan(0);
    expect(lookups[0]!.query.with).toBe("participants");
    const messages = await messagesOf(chat.id);
    expect(messages.map((m) => [m.phone, m.message, m.chat_id])).toEqual([
      [bob, "got it", chat.id],
      [ann, "rope?", chat.id],
    ]);
  });

  test("neither person's one-to-one history nor a default poll has them; chats=all has both, in order", async () => {
    expect((await history(server, ann)).total).toBe(0);
    expect((await history(server, bob)).total).toBe(0);
    const ids = (await messagesOf(chat.id)).map((m) => m.id).reverse();
    expect((await poll(server)).messages.map((m) => m.id)).not.toContain(ids[0]);
    const all = (await poll(server, { chats: "all" })).messages.map((m) => m.id);
    expect(all.filter((id) => ids.includes(id))).toEqual(ids);
  });

  test("a send with chat_id reaches message/text with the group's chat guid, and its echo makes it sent", async () => {
    const sent = await call<{ message_id: string }>(server, "POST", "/api/send", { body: { chat_id: chat.id, message: "see you at 6" } });
    expect(sent.status).toBe(200);
    const request = fake.sends.at(-1)!;
    expect([request.path, request.body.chatGuid, request.body.message, request.body.tempGuid]).toEqual([
      "/api/v1/message/text",
      group.guid,
      "see you at 6",
      `textwire-${sent.body.message_id}`,
    ]);
    const ours = (await messagesOf(chat.id))[0]!;
    expect(ours).toMatchObject({ id: sent.body.message_id, phone: null, direction: "outbound", chat_id: chat.id });
    expect(["sent", "delivered"]).toContain(ours.status);
  });

  test("renaming through the API is PUT chat/:guid with displayName; the chat is renamed and chat.updated is pushed", async () => {
    const renamed = await call<{ chat: Chat }>(server, "PATCH", `/api/chats/${chat.id}`, { body: { name: "Crag crew" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.chat).toMatchObject({ id: chat.id, name: "Crag crew" });
    const put = fake.requests.filter((r) => r.method === "PUT").at(-1)!;
    expect([put.path, put.body]).toEqual([`/api/v1/chat/${encodeURIComponent(group.guid)}`, { displayName: "Crag crew" }]);
    await waitUntil("chat.updated for the rename", () => pushed().find((e) => e.data.name === "Crag crew"), 10_000);
    expect(pushed().find((e) => e.data.name === "Crag crew")).toMatchObject({ type: "chat.updated", data: { id: chat.id, kind: "group", participants: [ann, bob] } });
  });

  test("participants added and removed through the API reach participant/add and participant/remove", async () => {
    const carol = newPhone();
    const added = await call<{ chat: Chat }>(server, "POST", `/api/chats/${chat.id}/participants`, { body: { phone: carol } });
    expect(added.status).toBe(200);
    expect(added.body.chat.participants).toEqual([ann, bob, carol]);
    const removed = await call<{ chat: Chat }>(server, "DELETE", `/api/chats/${chat.id}/participants/${carol}`);
    expect(removed.status).toBe(200);
    expect(removed.body.chat.participants).toEqual([ann, bob]);
    const posted = fake.requests.filter((r) => r.path.includes("/participant/")).map((r) => [r.path.split("/").at(-1), r.body.address]);
    expect(posted).toEqual([
      ["add", carol],
      ["remove", carol],
    ]);
    expectError(await call(server, "DELETE", `/api/chats/${chat.id}/participants/${encodeURIComponent(carol)}`), 404, "NOT_FOUND");
  });

  test("the contact renaming it and leaving update the chat and push chat.updated; the changes' new-message items are no messages", async () => {
    const before = (await messagesOf(chat.id)).length;
    await fake.contactRenamesGroup(group, bob, "Bouldering");
    await waitUntil("renamed by bob", async () => (await call<{ chat: Chat }>(server, "GET", `/api/chats/${chat.id}`)).body.chat.name === "Bouldering", 10_000);
    await fake.contactLeavesGroup(group, bob);
    await waitUntil("bob left", async () => (await call<{ chat: Chat }>(server, "GET", `/api/chats/${chat.id}`)).body.chat.participants.length === 1, 10_000);
    expect((await call<{ chat: Chat }>(server, "GET", `/api/chats/${chat.id}`)).body.chat).toMatchObject({ name: "Bouldering", participants: [ann] });
    await waitUntil("chat.updated for the leave", () => pushed().find((e) => e.data.participants.length === 1), 10_000);
    expect(pushed().map((e) => [e.data.name, e.data.participants])).toEqual(
      expect.arrayContaining([
        ["Bouldering", [ann, bob]],
        ["Bouldering", [ann]],
      ]),
    );
    expect((await messagesOf(chat.id)).length).toBe(before);
  });

  test("with the Private API off a rename is 422 and changes nothing", async () => {
    fake.privateApi.enabled = false;
    try {
      expectError(await call(server, "PATCH", `/api/chats/${chat.id}`, { body: { name: "Nope" } }), 422, "UNPROCESSABLE_CONTENT");
      expect((await call<{ chat: Chat }>(server, "GET", `/api/chats/${chat.id}`)).body.chat.name).toBe("Bouldering");
    } finally {
      fake.privateApi.enabled = true;
    }
  });
});

test("POST /api/chats creates a group with chat/new (every address, private-api) and answers 201 with the chat and its message", async () => {
  const [a, b] = [newPhone(), newPhone()];
  const made = await call<{ success: boolean; chat: Chat; message: Record_ }>(server, "POST", "/api/chats", { body: { participants: [a, b], name: "Book club", message: "Welcome!" } });
  expect(made.status).toBe(201);
  expect(made.body.chat).toMatchObject({ kind: "group", name: "Book club", participants: [a, b] });
  expect(made.body.message).toMatchObject({ message: "Welcome!", phone: null, chat_id: made.body.chat.id, direction: "outbound" });
  const create = fake.sends.filter((r) => r.path === "/api/v1/chat/new").at(-1)!;
  expect(create.body).toMatchObject({ addresses: [a, b], message: "Welcome!", method: "private-api", tempGuid: `textwire-${made.body.message.id}` });
  const guid = [...fake.chats.values()].find((c) => c.participants.join() === [a, b].join())!.guid;
  expect(fake.requests.some((r) => r.method === "PUT" && r.path === `/api/v1/chat/${encodeURIComponent(guid)}` && r.body.displayName === "Book club")).toBe(true);
  // The group is known by its guid: the next send goes to it.
  const next = await call<{ message_id: string }>(server, "POST", "/api/send", { body: { chat_id: made.body.chat.id, message: "chapter 3" } });
  expect(next.status).toBe(200);
  expect(fake.sends.at(-1)!.body.chatGuid).toBe(guid);
  // Bad input names the field.
  const e = expectError(await call(server, "POST", "/api/chats", { body: { participants: [a], message: "x" } }), 400, "BAD_REQUEST");
  expect(e.error.message).toContain("participants");
});
