// Chats in storage (src/db/chats.ts and the migrations' triggers) on every dialect: direct
// chats made by a contact's first message, group chats made once per network id, counts and
// latest activity kept by the triggers, group messages kept out of the contact's history and
// the default poll, pages with their totals, and mutes.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { isChatMuted, listChatMessages, listChats, updateGroup } from "../../src/messages/chats";
import { pollInbound, recordInbound } from "../../src/messages/service";
import { dialects, inboundRow, storages, oneLine, envLineOf, reader } from "./helpers";

setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";
const message = inboundRow;
const group = (networkId: string) => ({ id: `grp_${networkId}`, kind: "group" as const, name: "Team", participants: [A, B], network: "loopback", networkId });

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);

  test("a contact's first message makes its direct chat; every message counts and moves last_message_at", async () => {
    const storage = await fresh();
    expect(await storage.chats.get("dm_14155550123")).toBeUndefined();
    const first = (await storage.messages.insert(message())).row;
    const second = (await storage.messages.insert(message({ direction: "outbound", status: "queued" }))).row;
    const row = {
      id: "dm_14155550123", kind: "direct" as const, name: null, participants: [A], network: null, networkId: null,
      createdAt: first.timestamp, lastMessageAt: second.timestamp, messages: 2, muted: false, ourTyping: false, lineId: "ln_default",
      mode: "auto" as const, previousMode: null, humanUntil: null,
    };
    expect(await storage.chats.get("dm_14155550123")).toEqual(row);
    // The view adds the unread count, for the API only.
    expect(await storage.chats.view("dm_14155550123")).toEqual({ ...row, unread: 1 });
  });

  test("a group is made once per network id; its messages count in it, not in the sender's history nor the default poll", async () => {
    const storage = await fresh();
    const made = (await storage.chats.create(group("g1")))!;
    expect(made).toMatchObject({ kind: "group", name: "Team", participants: [A, B], network: "loopback", networkId: "g1", lastMessageAt: null, messages: 0 });
    expect(await storage.chats.create({ ...group("g1"), id: "grp_other" })).toBeUndefined();
    expect(await storage.chats.byNetworkId("loopback", "g1")).toEqual(made);

    await storage.messages.insert(message({ body: "direct" }));
    const inGroup = (await storage.messages.insert(message({ body: "group", chatId: made.id }))).row;
    const ours = (await storage.messages.insert(message({ phone: "", direction: "outbound", status: "queued", body: "ours", chatId: made.id }))).row;
    expect(await storage.chats.get(made.id)).toMatchObject({ messages: 2, lastMessageAt: ours.timestamp });
    expect((await storage.messages.history(A, 10, 0)).rows.map((r) => r.body)).toEqual(["direct"]);
    expect((await storage.messages.history(A, 10, 0)).total).toBe(1);
    expect((await pollInbound(reader(storage), { limit: 10 })).messages.map((m) => m.message)).toEqual(["direct"]);
    const all = await pollInbound(reader(storage), { limit: 10, chats: "all" });
    expect(all.messages.map((m) => [m.message, m.phone, m.chat_id])).toEqual([
      ["direct", A, "dm_14155550123"],
      ["group", A, made.id],
    ]);
    const page = await listChatMessages(storage, { id: made.id, limit: 1, offset: 0 });
    expect(page).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(page.messages.map((m) => [m.id, m.phone])).toEqual([[ours.id, null]]);
    expect((await listChatMessages(storage, { id: made.id, limit: 10, offset: 5 })).messages).toEqual([]);
    expect((await listChatMessages(storage, { id: made.id, limit: 10, offset: 5 })).total).toBe(2);
    expect(await storage.messages.readChatInbound(made.id)).toBe(1);
    expect((await storage.messages.get(inGroup.id))?.readAt).not.toBeNull();
    expect(await storage.messages.unread(A)).toBe(1);
  });

  test("chats list latest activity first, by kind, with their total; a chat without messages by its creation", async () => {
    const storage = await fresh();
    // Each step on a later millisecond than the one before: equal times would fall to the id
    // tie-break (id DESC), and this test is about the times.
    const empty = (await storage.chats.create(group("g2")))!;
    await Bun.sleep(3);
    await storage.messages.insert(message({ phone: B }));
    await Bun.sleep(3);
    await storage.messages.insert(message());
    const chats = await listChats(storage, { limit: 10, offset: 0 });
    expect(chats.chats.map((c) => c.id)).toEqual(["dm_14155550123", "dm_442079460958", empty.id]);
    expect(chats.total).toBe(3);
    expect(await listChats(storage, { kind: "group", limit: 10, offset: 0 })).toMatchObject({ total: 1, chats: [{ id: empty.id, last_message_at: null }] });
    expect(await listChats(storage, { kind: "direct", limit: 1, offset: 5 })).toMatchObject({ total: 2, chats: [] });
  });

  test("a change is stored with its chat.updated event; none when nothing changed", async () => {
    const storage = await fresh();
    const made = (await storage.chats.create(group("g3")))!;
    expect((await updateGroup(storage, made.id, (c) => ({ name: "Renamed", participants: c.participants }))).changed).toBe(true);
    expect((await updateGroup(storage, made.id, (c) => ({ name: c.name, participants: [...c.participants] }))).changed).toBe(false);
    const { rows } = await storage.webhooks.events(0, 10, "chat.updated");
    expect(rows.map((e) => (e as unknown as { data: { name: string } }).data.name)).toEqual(["Renamed"]);
  });

  test("a chat's unread: a group's inbound messages not read, a direct chat's its contact's; ours and other chats' do not count", async () => {
    const storage = await fresh();
    const { chats } = storage;
    const made = (await chats.create(group("g7")))!;
    expect((await chats.view(made.id))?.unread).toBe(0);
    await storage.messages.insert(message({ chatId: made.id }));
    await storage.messages.insert(message({ phone: B, chatId: made.id }));
    await storage.messages.insert(message({ phone: "", direction: "outbound", status: "queued", chatId: made.id }));
    await storage.messages.insert(message());
    await storage.messages.insert(message({ phone: B }));
    await storage.messages.insert(message({ phone: B }));
    const unread = async () => Object.fromEntries((await chats.list(undefined, 10, 0)).rows.map((c) => [c.id, c.unread]));
    expect(await unread()).toEqual({ [made.id]: 2, dm_14155550123: 1, dm_442079460958: 2 });
    expect((await chats.view(made.id))?.unread).toBe(2);
    expect(await storage.messages.readChatInbound(made.id)).toBe(2);
    expect(await unread()).toEqual({ [made.id]: 0, dm_14155550123: 1, dm_442079460958: 2 });
    expect(await storage.messages.readInbound(B)).toBe(2);
    expect((await chats.view("dm_442079460958"))?.unread).toBe(0);
    expect(await chats.view("grp_none")).toBeUndefined();
    // A page's counts are its rows' own.
    expect((await chats.list("group", 1, 0)).rows.map((c) => [c.id, c.unread])).toEqual([[made.id, 0]]);
    expect((await chats.list(undefined, 1, 1)).rows.map((c) => [c.id, c.unread])).toEqual([["dm_14155550123", 1]]);
  });

  test("our typing in a group: on until stopped or expired, an expired one listed with the network's id and cleared once", async () => {
    const storage = await fresh();
    const { chats } = storage;
    const team = (await chats.create(group("g5")))!;
    const other = (await chats.create(group("g6")))!;
    expect(team.ourTyping).toBe(false);
    await chats.startOurTyping(team.id, 60_000);
    await chats.startOurTyping(other.id, -1_000);
    // What a send into the group reads: on, expired or not, until the sweep clears it.
    expect((await chats.get(team.id))?.ourTyping).toBe(true);
    expect((await chats.list("group", 10, 0)).rows.map((c) => [c.id, c.ourTyping]).sort()).toEqual([[team.id, true], [other.id, true]].sort());
    expect(await chats.ourTypingExpired(10)).toEqual([{ id: other.id, networkId: "g6", lineId: "ln_default" }]);
    expect(await chats.stopOurTyping(team.id, true)).toBe(false);
    expect(await chats.stopOurTyping(other.id, true)).toBe(true);
    expect(await chats.stopOurTyping(other.id, true)).toBe(false);
    expect(await chats.ourTypingExpired(10)).toEqual([]);
    expect((await chats.get(other.id))?.ourTyping).toBe(false);
    expect(await chats.stopOurTyping(team.id, false)).toBe(true);
    expect(await chats.stopOurTyping(team.id, false)).toBe(false);
    expect((await chats.get(team.id))?.ourTyping).toBe(false);
  });

  test("STOP in a group opts the sender out and mutes the chat until the same sender's START", async () => {
    const storage = await fresh();
    const made = (await storage.chats.create(group("g4")))!;
    expect(await isChatMuted(storage, made.id)).toBe(false);
    await recordInbound(storage, envLineOf("loopback"), { phone: B, message: "STOP", chatId: made.id });
    expect(await isChatMuted(storage, made.id)).toBe(true);
    expect((await storage.contacts.get(B))?.optedOut).toBe(true);
    await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "start", chatId: made.id });
    expect(await isChatMuted(storage, made.id)).toBe(true);
    await recordInbound(storage, envLineOf("loopback"), { phone: B, message: "Start", chatId: made.id });
    expect(await isChatMuted(storage, made.id)).toBe(false);
    expect((await storage.contacts.get(B))?.optedOut).toBe(false);
  });
});
