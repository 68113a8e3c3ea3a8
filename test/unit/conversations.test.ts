// The console's conversation list: messages.conversations on each dialect and listConversations over it.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { NewMessage } from "../../src/db/port";
import { listConversations } from "../../src/messages/conversations";
import { dialects, storages } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";
const C = "+14155559999";

let seq = 0;
function outbound(phone: string, body: string): NewMessage {
  return { id: `out-${++seq}`, phone, body, direction: "outbound", status: "queued", network: "loopback", networkId: null };
}
function inbound(phone: string, body: string): NewMessage {
  return { id: `in-${++seq}`, phone, body, direction: "inbound", status: "received", network: "loopback", networkId: null };
}

describe.each(dialects)("conversations on $name", (dialect) => {
  const fresh = storages(dialect);

  /** A to C, then B; C's last message is inbound, and C only ever wrote in. */
  async function seeded() {
    const storage = await fresh();
    const store = storage.messages;
    await store.insert(outbound(A, "a1"));
    await store.insert(inbound(C, "c1"));
    await store.insert(inbound(A, "a2"));
    await store.insert(outbound(B, "b1"));
    await store.insert(inbound(C, "c2"));
    await store.insert(inbound(B, "b2"));
    return storage;
  }

  test("one per phone with its newest message, the most recently active first", async () => {
    const storage = await seeded();
    const rows = await storage.messages.conversations({ limit: 50 });
    expect(rows.map((r) => [r.phone, r.body, r.direction])).toEqual([
      [B, "b2", "inbound"],
      [C, "c2", "inbound"],
      [A, "a2", "inbound"],
    ]);
    expect(rows.map((r) => r.optedOut)).toEqual([false, false, false]);
    // The rows are records as history reads them: the newest of B is what its history shows first.
    const newestOfB = (await storage.messages.history(B, 1, 0)).rows[0]!;
    expect({ ...rows[0]!, optedOut: undefined, unread: undefined }).toEqual({ ...newestOfB, optedOut: undefined, unread: undefined });
  });

  test("a new message moves its phone to the top", async () => {
    const storage = await seeded();
    await storage.messages.insert(outbound(A, "a3"));
    const rows = await storage.messages.conversations({ limit: 50 });
    expect(rows.map((r) => [r.phone, r.body])).toEqual([
      [A, "a3"],
      [B, "b2"],
      [C, "c2"],
    ]);
  });

  test("limit keeps the most recently active", async () => {
    const storage = await seeded();
    expect((await storage.messages.conversations({ limit: 2 })).map((r) => r.phone)).toEqual([B, C]);
    expect((await storage.messages.conversations({ limit: 1 })).map((r) => r.phone)).toEqual([B]);
  });

  test("search matches any part of the number, '+' included", async () => {
    const storage = await seeded();
    const phones = async (search: string) => (await storage.messages.conversations({ search, limit: 50 })).map((r) => r.phone);
    expect(await phones("4155")).toEqual([C, A]);
    expect(await phones("+44")).toEqual([B]);
    expect(await phones("0958")).toEqual([B]);
    expect(await phones("9999")).toEqual([C]);
    expect(await phones("+14155550123")).toEqual([A]);
    expect(await phones("777")).toEqual([]);
    // Not a pattern: LIKE's wildcards mean nothing (the schema lets only digits and '+' through anyway).
    expect(await phones("%")).toEqual([]);
  });

  test("the opted-out flag comes from contacts; a contact that opted out without messages is not listed", async () => {
    const storage = await seeded();
    await storage.contacts.setOptedOut(C, true);
    await storage.contacts.setOptedOut("+15005550006", true);
    const rows = await storage.messages.conversations({ limit: 50 });
    expect(rows.map((r) => [r.phone, r.optedOut])).toEqual([
      [B, false],
      [C, true],
      [A, false],
    ]);
    await storage.contacts.setOptedOut(C, false);
    expect((await storage.messages.conversations({ limit: 50 })).find((r) => r.phone === C)?.optedOut).toBe(false);
  });

  test("line keeps the conversations whose newest message is on that line", async () => {
    const storage = await seeded();
    // B moves to another line with its newest message; A had one there before, then came back.
    await storage.messages.insert({ ...outbound(A, "a on sales"), lineId: "ln_sales" });
    await storage.messages.insert(inbound(A, "a on default"));
    await storage.messages.insert({ ...outbound(B, "b on sales"), lineId: "ln_sales" });
    const on = async (line?: string, search?: string) => (await storage.messages.conversations({ limit: 50, line, search })).map((r) => [r.phone, r.body]);
    expect(await on("ln_sales")).toEqual([[B, "b on sales"]]);
    expect(await on("ln_default")).toEqual([
      [A, "a on default"],
      [C, "c2"],
    ]);
    expect(await on("ln_sales", "+44")).toEqual([[B, "b on sales"]]);
    expect(await on("ln_sales", "4155")).toEqual([]);
    expect(await on("ln_none")).toEqual([]);
    expect((await on()).map(([phone]) => phone)).toEqual([B, A, C]);
  });

  test("no messages, no conversations", async () => {
    const storage = await fresh();
    expect(await storage.messages.conversations({ limit: 50 })).toEqual([]);
  });

  test("listConversations gives message records, media included, and the opt-out", async () => {
    const storage = await seeded();
    const media = [{ id: "med_00000000000000000000000000000001", contentType: "image/png", size: 3, storeKey: "k1" }];
    const { row } = await storage.messages.insert({ ...inbound(A, "look"), media });
    await storage.contacts.setOptedOut(B, true);
    const listed = await listConversations(storage.messages, { limit: 50 });
    expect(listed.map((c) => [c.phone, c.opted_out])).toEqual([
      [A, false],
      [B, true],
      [C, false],
    ]);
    expect(listed[0]!.last_message).toMatchObject({
      id: row.id,
      phone: A,
      message: "look",
      direction: "inbound",
      status: "received",
      reply_to: null,
      media: [{ id: media[0]!.id, content_type: "image/png", size: 3, url: `/api/media/${media[0]!.id}` }],
    });
    expect(listed[1]!.last_message).toMatchObject({ phone: B, message: "b2", media: [] });
    expect((await listConversations(storage.messages, { search: "44", limit: 50 })).map((c) => c.phone)).toEqual([B]);
  });
});
