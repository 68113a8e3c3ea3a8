// Issue 24's storage (src/db/port.ts) on every dialect: reactions (one a person, counted by
// triggers), read state, edits and unsends applied once, typing on contacts, and the events
// the domain appends in the transaction of their change.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { NewMessage, Storage } from "../../src/db/port";
import { listHistory } from "../../src/messages/service";
import { dialects, storages, reader } from "./helpers";

setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";

let seq = 0;
const message = (direction: "inbound" | "outbound", extra: Partial<NewMessage> = {}): NewMessage => ({
  id: `m-${++seq}`,
  phone: A,
  body: direction === "inbound" ? "hi" : "hello",
  direction,
  status: direction === "inbound" ? "received" : "delivered",
  network: "loopback",
  networkId: `net-${seq}`,
  ...extra,
});

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  const insert = async (storage: Storage, direction: "inbound" | "outbound", extra: Partial<NewMessage> = {}) =>
    (await storage.messages.insert(message(direction, extra))).row;

  test("reactions: one a person, replaced by their next, removed only as named; counted and shown in the record", async () => {
    const storage = await fresh();
    const { messages } = storage;
    const ours = await insert(storage, "outbound");
    const plain = await insert(storage, "outbound");
    expect(await messages.react(ours.id, "inbound", A, "love")).toBe(true);
    expect(await messages.react(ours.id, "inbound", A, "love")).toBe(false);
    expect(await messages.react(ours.id, "inbound", A, "like")).toBe(true);
    expect(await messages.react(ours.id, "outbound", "", "laugh")).toBe(true);
    expect((await messages.get(ours.id))?.reactionCount).toBe(2);
    const reactions = await messages.reactionsOf([ours.id, plain.id]);
    expect([...reactions.keys()]).toEqual([ours.id]);
    expect(reactions.get(ours.id)!.map((r) => [r.direction, r.phone, r.reaction])).toEqual(
      expect.arrayContaining([
        ["inbound", A, "like"],
        ["outbound", "", "laugh"],
      ]),
    );
    const page = await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 });
    expect(page.messages.map((m) => m.reactions.map((r) => [r.reaction, r.direction, r.phone]).sort())).toEqual([
      [],
      [
        ["laugh", "outbound", null],
        ["like", "inbound", A],
      ],
    ]);
    expect(page.messages[1]!.reactions[0]!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);

    // A removal of another reaction than theirs (a late "-love" after "like") changes nothing.
    expect(await messages.unreact(ours.id, "inbound", A, "love")).toBeUndefined();
    expect(await messages.unreact(ours.id, "inbound", A, "like")).toBe("like");
    expect(await messages.unreact(ours.id, "outbound", "")).toBe("laugh");
    expect(await messages.unreact(ours.id, "outbound", "")).toBeUndefined();
    expect((await messages.get(ours.id))?.reactionCount).toBe(0);
    expect((await messages.reactionsOf([ours.id])).size).toBe(0);
  });

  test("read receipts: our messages that went out, up to the one read, are read once; statuses stay", async () => {
    const storage = await fresh();
    const { messages } = storage;
    const first = await insert(storage, "outbound", { status: "sent" });
    const failed = await insert(storage, "outbound", { status: "failed" });
    await insert(storage, "inbound");
    const read = await insert(storage, "outbound");
    const after = await insert(storage, "outbound");
    const other = await insert(storage, "outbound", { phone: B });
    const at = Date.now() - 5_000;
    expect((await messages.readOutbound(A, read.timestamp, at)).sort()).toEqual([first.id, read.id].sort());
    expect(await messages.readOutbound(A, read.timestamp, at + 1)).toEqual([]);
    expect((await messages.get(read.id))?.readAt).toBe(at);
    expect((await messages.get(first.id))?.status).toBe("sent");
    for (const m of [failed, after, other]) expect((await messages.get(m.id))?.readAt).toBeNull();
  });

  test("unread: the contact's inbound messages not read, zeroed by reading them; listed per conversation", async () => {
    const storage = await fresh();
    const { messages } = storage;
    await insert(storage, "inbound");
    await insert(storage, "outbound");
    await insert(storage, "inbound");
    await insert(storage, "inbound", { phone: B });
    expect(await messages.unread(A)).toBe(2);
    expect((await messages.conversations({ limit: 10 })).map((c) => [c.phone, c.unread])).toEqual([
      [B, 1],
      [A, 2],
    ]);
    expect(await messages.readInbound(A)).toBe(2);
    expect(await messages.readInbound(A)).toBe(0);
    expect(await messages.unread(A)).toBe(0);
    expect(await messages.unread(B)).toBe(1);
    await insert(storage, "inbound");
    expect(await messages.unread(A)).toBe(1);
  });

  test("edits apply once per time and count; an unsend empties the message once and ends its edits", async () => {
    const storage = await fresh();
    const { messages } = storage;
    const m = await insert(storage, "inbound");
    const t = Date.now();
    expect(await messages.edit(m.id, "hi there", t)).toBe(true);
    expect(await messages.edit(m.id, "hi there", t)).toBe(false);
    expect(await messages.edit(m.id, "older", t - 1)).toBe(false);
    expect(await messages.edit(m.id, "hi again", t + 1)).toBe(true);
    expect(await messages.get(m.id)).toMatchObject({ body: "hi again", editedAt: t + 1, editCount: 2, unsentAt: null });
    expect(await messages.unsend(m.id, t + 2)).toBe(true);
    expect(await messages.unsend(m.id, t + 3)).toBe(false);
    expect(await messages.edit(m.id, "back", t + 4)).toBe(false);
    expect(await messages.get(m.id)).toMatchObject({ body: "", editedAt: t + 1, editCount: 2, unsentAt: t + 2 });
    const [record] = (await listHistory(reader(storage), { phone: A, limit: 1, offset: 0 })).messages;
    expect(record).toMatchObject({ message: "", edited_at: new Date(t + 1).toISOString().replace("Z", "000Z"), unsent_at: expect.any(String) });
  });

  test("recentOutbound: our newest messages that went out, newest first", async () => {
    const storage = await fresh();
    await insert(storage, "outbound", { body: "a" });
    await insert(storage, "outbound", { body: "never", status: "failed" });
    await insert(storage, "inbound");
    const b = await insert(storage, "outbound", { body: "b" });
    const c = await insert(storage, "outbound", { body: "c", status: "queued" });
    expect((await storage.messages.recentOutbound(A, 2)).map((m) => m.id)).toEqual([c.id, b.id]);
    expect((await storage.messages.recentOutbound(A, 50)).map((m) => m.body)).toEqual(["c", "b", "a"]);
  });

  test("typing: the contact's for a while, ours on until stopped or expired; a contact without messages is not listed", async () => {
    const storage = await fresh();
    const { contacts } = storage;
    expect(await contacts.typing(A)).toBe(false);
    await contacts.setTyping(A, 60_000);
    expect(await contacts.typing(A)).toBe(true);
    await contacts.setTyping(A, null);
    expect(await contacts.typing(A)).toBe(false);
    await contacts.setTyping(A, -1);
    expect(await contacts.typing(A)).toBe(false);
    expect(await storage.messages.conversations({ limit: 10 })).toEqual([]);

    await contacts.startOurTyping(A, 60_000);
    await contacts.startOurTyping(B, -1_000);
    expect(await contacts.ourTypingExpired(10)).toEqual([B]);
    expect(await contacts.stopOurTyping(A, true)).toBe(false);
    expect(await contacts.stopOurTyping(B, true)).toBe(true);
    expect(await contacts.stopOurTyping(B, true)).toBe(false);
    expect(await contacts.ourTypingExpired(10)).toEqual([]);
    expect(await contacts.stopOurTyping(A, false)).toBe(true);
    expect(await contacts.stopOurTyping(A, false)).toBe(false);
    expect(await contacts.get(A)).toEqual({ phone: A, optedOut: false, optedOutAt: null });

    // What a send checks: one read of the opt-out and whether our indicator is on (expired or not, until the sweep clears it).
    expect(await contacts.beforeSend("+15005550006")).toEqual({ optedOut: false, ourTyping: false });
    expect(await contacts.beforeSend(A)).toEqual({ optedOut: false, ourTyping: false });
    await contacts.startOurTyping(A, -1_000);
    await contacts.setOptedOut(A, true);
    expect(await contacts.beforeSend(A)).toEqual({ optedOut: true, ourTyping: true });
  });

  test("appended events: in the transaction of their change, after the triggers' events, with data, fanned out to endpoints", async () => {
    const storage = await fresh();
    const endpoint = await storage.webhooks.createEndpoint({ id: "we_1", url: "https://example.com/h", events: ["message.reaction_added"], description: null, secret: "whsec_x" });
    const m = await insert(storage, "outbound");
    await storage.transaction(async (tx) => {
      await tx.messages.react(m.id, "inbound", A, "love");
      await tx.events.append("message.reaction_added", { messageId: m.id, data: { reaction: { reaction: "love", direction: "inbound", phone: A } } });
      await tx.contacts.setTyping(A, 60_000);
      await tx.events.append("contact.typing", { data: { phone: A, typing: true } });
    });
    await expect(
      storage.transaction(async (tx) => {
        await tx.events.append("message.read", { messageId: m.id });
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    await insert(storage, "inbound");
    const { rows } = await storage.webhooks.events(-1, 10);
    expect(rows.map((r) => r.type)).toEqual(["message.reaction_added", "contact.typing", "message.received"]);
    expect(rows[0]).toMatchObject({
      message: { id: m.id, status: "delivered", reactionCount: 1 },
      previousStatus: null,
      data: { reaction: { reaction: "love", direction: "inbound", phone: A } },
    });
    expect(rows[1]).toEqual({ id: expect.stringMatching(/^evt_[0-9a-f]{32}$/), type: "contact.typing", timestamp: expect.any(Number), data: { phone: A, typing: true } });
    expect(rows[0]!.timestamp).toBeLessThan(rows[1]!.timestamp);
    expect(rows[1]!.timestamp).toBeLessThan(rows[2]!.timestamp);
    expect((await storage.webhooks.deliveries(endpoint.id, 10)).map((d) => d.eventType)).toEqual(["message.reaction_added"]);
  });
});
