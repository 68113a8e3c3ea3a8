// Issue 24's service functions (src/messages/reactions.ts, typing.ts, read-state.ts,
// edits.ts) on every dialect: what the network is asked, what is stored, which events are
// written, and what networks without the capability answer (422, nothing changed).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Storage } from "../../src/db/port";
import { AppError } from "../../src/errors";
import { createLogger } from "../../src/log";
import { eventsOutput } from "../../src/events/schemas";
import { listEvents } from "../../src/events/service";
import { getContact } from "../../src/messages/contacts";
import { editOurMessage, unsendOurMessage } from "../../src/messages/edits";
import { applyNetworkEvents, receiveLoopback } from "../../src/messages/network-events";
import { parseReactionText, reactToMessage, removeOurReaction } from "../../src/messages/reactions";
import { markConversationRead } from "../../src/messages/read-state";
import { setChatTyping } from "../../src/messages/groups";
import { listHistory, pollInbound, recordInbound, sendMessage, sendStored } from "../../src/messages/service";
import { isContactTyping, setOurTyping, stopExpiredTyping } from "../../src/messages/typing";
import type { NetworkDriver, WebhookEvents } from "../../src/network/driver";
import { createLoopbackNetwork } from "../../src/network/loopback";
import { dialects, quietLog, rejectionOf, storages, TEXT_ONLY, oneLine, envLineOf, reader } from "./helpers";

setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";

/** The loopback network, recording what it was asked beyond sends. */
function recordingNetwork() {
  const calls: unknown[][] = [];
  const loopback = createLoopbackNetwork();
  const record =
    (name: string) =>
    async (...args: unknown[]) => {
      calls.push([name, ...args]);
    };
  const network: NetworkDriver = {
    ...loopback,
    react: record("react"),
    typing: record("typing"),
    markRead: record("markRead"),
    edit: record("edit"),
    unsend: record("unsend"),
  };
  return { network, calls };
}

/** A network that only sends text (Twilio's kind). */
const textOnly: NetworkDriver = { name: "twilio", capabilities: TEXT_ONLY, send: async (m) => ({ networkId: `SM${m.id}`, status: "sent" }) };

const events = (extra: Partial<WebhookEvents>): WebhookEvents => ({ inbound: [], statuses: [], reactions: [], typing: [], reads: [], edits: [], ...extra });

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await rejectionOf(promise);
  expect(err).toBeInstanceOf(AppError);
  return { code: (err as AppError).code, message: (err as AppError).message };
}

describe("SMS reaction texts", () => {
  test.each([
    ["Loved “See you at 6”", { reaction: "love", remove: false, quoted: "See you at 6" }],
    ["Liked “ok”", { reaction: "like", remove: false, quoted: "ok" }],
    ["Disliked “no”", { reaction: "dislike", remove: false, quoted: "no" }],
    ['Laughed at "a joke"', { reaction: "laugh", remove: false, quoted: "a joke" }],
    ["Emphasized “Two lines, the second”", { reaction: "emphasize", remove: false, quoted: "Two lines, the second" }],
    ["Questioned “what?”", { reaction: "question", remove: false, quoted: "what?" }],
    ["Removed a heart from “See you at 6”", { reaction: "love", remove: true, quoted: "See you at 6" }],
    ["Removed a like from “ok”", { reaction: "like", remove: true, quoted: "ok" }],
    ["Removed a dislike from “no”", { reaction: "dislike", remove: true, quoted: "no" }],
    ["Removed a laugh from “a joke”", { reaction: "laugh", remove: true, quoted: "a joke" }],
    ["Removed an exclamation from “hey”", { reaction: "emphasize", remove: true, quoted: "hey" }],
    ["Removed a question mark from “what?”", { reaction: "question", remove: true, quoted: "what?" }],
    ["Removed a heart “See you”", { reaction: "love", remove: true, quoted: "See you" }],
  ])("%s", (text, parsed) => {
    expect(parseReactionText(text)).toEqual(parsed as ReturnType<typeof parseReactionText>);
  });

  test("a quoted message of several lines", () => {
    expect(parseReactionText("Loved “one\ntwo”")?.quoted).toBe("one\ntwo");
  });

  test.each(["Loved it", "I Loved “that”!", "Loved an image", "Reacted 😂 to “hi”", "loved “hi”", "Liked “unclosed"])("not one: %s", (text) => {
    expect(parseReactionText(text)).toBeUndefined();
  });
});

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  async function setup(network?: NetworkDriver) {
    const storage = await fresh();
    const recording = recordingNetwork();
    const deps = { storage, lines: oneLine(network ?? recording.network), log: quietLog };
    return { storage, deps, calls: recording.calls };
  }
  const apply = (storage: Storage, network: string, e: Partial<WebhookEvents>) => applyNetworkEvents(storage, envLineOf(network), events(e), quietLog, { maxMessageLength: 1600 });
  /** The events of issue 24's types (not the triggers' message.received and message.status_updated), as GET /api/events' schema reads them. */
  const eventsOf = async (storage: Storage) =>
    eventsOutput
      .parse({ success: true, ...(await listEvents(storage, { limit: 100 })) })
      .events.filter((e) => e.type !== "message.received" && e.type !== "message.status_updated");
  const sql = (storage: Storage, text: string) => dialect.rows(storage, text);

  describe("reactions", () => {
    test("ours reach the network, stand in the record and write their events; the same one again changes nothing", async () => {
      const { storage, deps, calls } = await setup();
      const sent = await sendMessage(deps, { phone: A, message: "hello" });
      const loved = await reactToMessage(deps, sent.id, "love");
      expect(loved.reactions).toEqual([{ reaction: "love", direction: "outbound", phone: null, timestamp: expect.any(String) }]);
      expect(calls).toEqual([["react", { networkId: `loopback:${sent.id}`, phone: A }, "love", false]]);
      expect((await reactToMessage(deps, sent.id, "love")).reactions).toHaveLength(1);
      expect(calls).toHaveLength(1);
      expect((await reactToMessage(deps, sent.id, "like")).reactions.map((r) => r.reaction)).toEqual(["like"]);
      const removed = await removeOurReaction(deps, sent.id);
      expect(removed.reactions).toEqual([]);
      expect(calls.at(-1)).toEqual(["react", { networkId: `loopback:${sent.id}`, phone: A }, "like", true]);
      expect((await removeOurReaction(deps, sent.id)).reactions).toEqual([]);
      expect(calls).toHaveLength(3);
      const listed = await eventsOf(storage);
      expect(listed.map((e) => [e.type, "reaction" in e.data ? e.data.reaction : undefined])).toEqual([
        ["message.reaction_added", { reaction: "love", direction: "outbound", phone: null }],
        ["message.reaction_added", { reaction: "like", direction: "outbound", phone: null }],
        ["message.reaction_removed", { reaction: "like", direction: "outbound", phone: null }],
      ]);
      expect(listed[0]!.data).toMatchObject({ id: sent.id, message: "hello", status: "delivered" });
    });

    test("refused: 422 on a network without reactions (nothing changed), 404 for an unknown id, 409 for a message the network does not know", async () => {
      const { storage, deps } = await setup(textOnly);
      const sent = await sendMessage(deps, { phone: A, message: "hello" });
      expect(await codeOf(reactToMessage(deps, sent.id, "love"))).toEqual({ code: "UNPROCESSABLE_CONTENT", message: "reaction: the twilio network cannot send reactions (line default)" });
      expect(await codeOf(removeOurReaction(deps, sent.id))).toMatchObject({ code: "UNPROCESSABLE_CONTENT" });
      expect((await storage.messages.get(sent.id))?.reactionCount).toBe(0);
      const loopback = (await setup()).deps;
      expect((await codeOf(reactToMessage(loopback, "nope", "love"))).code).toBe("NOT_FOUND");
      const { record } = await recordInbound(loopback.storage, envLineOf("loopback"), { phone: A, message: "no id" });
      expect((await codeOf(reactToMessage(loopback, record.id, "love"))).code).toBe("CONFLICT");
    });

    test("the contact's, from the network: one a person on messages of the conversation, never a message", async () => {
      const { storage, deps } = await setup();
      const sent = await sendMessage(deps, { phone: A, message: "hello" });
      const networkId = `loopback:${sent.id}`;
      expect((await apply(storage, "loopback", { reactions: [{ phone: A, targetNetworkId: networkId, reaction: "love", remove: false }] })).changed).toBe(1);
      await apply(storage, "loopback", { reactions: [{ phone: A, targetNetworkId: networkId, reaction: "love", remove: false }] });
      await apply(storage, "loopback", { reactions: [{ phone: B, targetNetworkId: networkId, reaction: "like", remove: false }] });
      await apply(storage, "loopback", { reactions: [{ phone: A, targetNetworkId: "unknown", reaction: "like", remove: false }] });
      let [record] = (await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 })).messages;
      expect(record!.reactions).toEqual([{ reaction: "love", direction: "inbound", phone: A, timestamp: expect.any(String) }]);
      // A late removal of another reaction changes nothing; the removal of theirs clears it.
      await apply(storage, "loopback", { reactions: [{ phone: A, targetNetworkId: networkId, reaction: "like", remove: true }] });
      await apply(storage, "loopback", { reactions: [{ phone: A, targetNetworkId: networkId, reaction: "love", remove: true }] });
      [record] = (await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 })).messages;
      expect(record!.reactions).toEqual([]);
      expect((await pollInbound(reader(storage), { limit: 10 })).messages).toEqual([]);
      expect((await eventsOf(storage)).map((e) => [e.type, "reaction" in e.data ? e.data.reaction : undefined])).toEqual([
        ["message.reaction_added", { reaction: "love", direction: "inbound", phone: A }],
        ["message.reaction_removed", { reaction: "love", direction: "inbound", phone: A }],
      ]);
    });

    test("an SMS reaction text quoting one of our messages to that phone is a reaction on it, never a message; any other stays a text", async () => {
      const { storage, deps } = await setup();
      const older = await sendMessage(deps, { phone: A, message: "Your order has shipped." });
      const newer = await sendMessage(deps, { phone: A, message: "Your order has shipped." });
      await sendMessage(deps, { phone: B, message: "Something else" });
      const text = (message: string, n: number) => ({ phone: A, message, networkId: `SM-${n}` });
      expect((await apply(storage, "twilio", { inbound: [text("Liked “Your order has shipped.”", 1)] })).stored).toBe(0);
      expect((await storage.messages.get(newer.id))?.reactionCount).toBe(1);
      expect((await storage.messages.get(older.id))?.reactionCount).toBe(0);
      // Delivered twice by the network (the same text): nothing new.
      await apply(storage, "twilio", { inbound: [text("Liked “Your order has shipped.”", 1)] });
      await apply(storage, "twilio", { inbound: [text("Removed a like from “Your order has shipped.”", 2)] });
      expect((await storage.messages.get(newer.id))?.reactionCount).toBe(0);
      const stored = await apply(storage, "twilio", { inbound: [text("Loved “Something else”", 3), text("Loved “not ours”", 4)] });
      expect(stored.stored).toBe(2);
      expect((await pollInbound(reader(storage), { limit: 10 })).messages.map((m) => m.message)).toEqual(["Loved “Something else”", "Loved “not ours”"]);
      expect((await eventsOf(storage)).filter((e) => e.type.startsWith("message.reaction")).map((e) => e.type)).toEqual([
        "message.reaction_added",
        "message.reaction_removed",
      ]);

      // The loopback webhook's path too: answered with the message reacted to.
      const answer = await receiveLoopback({ ...deps, config: { MAX_MESSAGE_LENGTH: 1600 } }, { phone: A, message: 'Emphasized "Your order has shipped."' });
      expect(answer).toMatchObject({ message_id: newer.id });
      const history = (await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 })).messages;
      expect(history.find((m) => m.id === newer.id)!.reactions.map((r) => r.reaction)).toEqual(["emphasize"]);
    });
  });

  describe("typing", () => {
    test("ours: told to the network, stopped by a send (state only) and swept after its time; 422 where the network cannot", async () => {
      const { storage, deps, calls } = await setup();
      const ours = async () => (await sql(storage, `SELECT phone, our_typing_until AS until FROM contacts WHERE our_typing_until IS NOT NULL`)).map((r) => r.phone);
      expect(await setOurTyping(deps, A, true)).toEqual({ typing: true });
      expect(calls).toEqual([["typing", A, true]]);
      expect(await ours()).toEqual([A]);
      await sendMessage(deps, { phone: A, message: "the answer" });
      expect(await ours()).toEqual([]);
      expect(calls).toHaveLength(1);

      await setOurTyping(deps, A, true);
      await setOurTyping(deps, B, true);
      expect(await stopExpiredTyping(deps)).toBe(0);
      await sql(storage, `UPDATE contacts SET our_typing_until = 1 WHERE phone = '${B}'`);
      expect(await stopExpiredTyping(deps)).toBe(1);
      expect(calls.at(-1)).toEqual(["typing", B, false]);
      expect(await ours()).toEqual([A]);
      expect(await setOurTyping(deps, A, false)).toEqual({ typing: false });
      expect(await ours()).toEqual([]);

      const twilio = (await setup(textOnly)).deps;
      expect(await codeOf(setOurTyping(twilio, A, true))).toEqual({ code: "UNPROCESSABLE_CONTENT", message: "typing: the twilio network cannot show typing (line default)" });
    });

    test("a send writes our typing's state only when it was on; the sweep logs a network that cannot stop it at debug, other failures at warn", async () => {
      const { storage, deps } = await setup();
      const stops: string[] = [];
      const contacts = { ...storage.contacts, stopOurTyping: (phone: string, expiredOnly: boolean) => (stops.push(phone), storage.contacts.stopOurTyping(phone, expiredOnly)) };
      const counted = { ...deps, storage: { ...storage, contacts } };
      await sendMessage(counted, { phone: A, message: "typing off" });
      expect(stops).toEqual([]);
      await setOurTyping(deps, A, true);
      await sendMessage(counted, { phone: A, message: "typing on" });
      expect(stops).toEqual([A]);

      const lines: { level: string; msg: string }[] = [];
      const log = createLogger("debug", {}, (line) => void lines.push(JSON.parse(line)));
      const failing = (err: Error): NetworkDriver => ({ ...deps.lines.default().driver, typing: async (_phone, on) => { if (!on) throw err; } });
      for (const err of [new AppError("UNPROCESSABLE_CONTENT", "typing: cannot stop"), new Error("connection refused")]) {
        await setOurTyping(deps, B, true);
        await sql(storage, `UPDATE contacts SET our_typing_until = 1 WHERE phone = '${B}'`);
        expect(await stopExpiredTyping({ storage, lines: oneLine(failing(err)), log })).toBe(1);
      }
      expect(lines.filter((l) => l.msg === "the network did not stop our typing").map((l) => l.level)).toEqual(["debug", "warn"]);
    });

    test("ours in a group: kept on the chat, stopped by a send into it (state only, scheduled sends too) and swept after its time once, the network told the group's id", async () => {
      const { storage, deps, calls } = await setup();
      const team = (await storage.chats.create({ id: "grp_team", kind: "group", name: "Team", participants: [A, B], network: "loopback", networkId: "team-guid" }))!;
      const ours = async () => (await sql(storage, `SELECT id FROM chats WHERE our_typing_until IS NOT NULL`)).map((r) => r.id);
      expect(await setChatTyping(deps, team.id, true)).toEqual({ typing: true });
      expect(calls).toEqual([["typing", "", true, "team-guid"]]);
      expect(await ours()).toEqual([team.id]);
      await sendMessage(deps, { chat_id: team.id, message: "the answer" });
      expect(await ours()).toEqual([]);
      expect(calls).toHaveLength(1);

      // A scheduled message going into the group (sendStored reads the chat) stops it too; a send to a participant does not.
      await setChatTyping(deps, team.id, true);
      await sendMessage(deps, { phone: A, message: "not the group" });
      expect(await ours()).toEqual([team.id]);
      const { row } = await storage.messages.insert({ id: "m-due", phone: "", chatId: team.id, body: "due now", direction: "outbound", status: "queued", network: "loopback", networkId: null });
      await sendStored(deps, row, false);
      expect(await ours()).toEqual([]);

      // Past its time: of two processes sweeping at once, one clears it and tells the network.
      await setChatTyping(deps, team.id, true);
      expect(await stopExpiredTyping(deps)).toBe(0);
      await sql(storage, `UPDATE chats SET our_typing_until = 1 WHERE id = '${team.id}'`);
      const swept = await Promise.all([stopExpiredTyping(deps), stopExpiredTyping(deps)]);
      expect(swept[0]! + swept[1]!).toBe(1);
      expect(calls.filter((c) => c[0] === "typing" && c[2] === false)).toEqual([["typing", "", false, "team-guid"]]);
      expect(await ours()).toEqual([]);

      await setChatTyping(deps, team.id, true);
      expect(await setChatTyping(deps, team.id, false)).toEqual({ typing: false });
      expect(calls.at(-1)).toEqual(["typing", "", false, "team-guid"]);
      expect(await ours()).toEqual([]);
    });

    test("typing in a group the network never made: 422 where the network cannot type (the capability first), else 409", async () => {
      const { storage, deps } = await setup();
      const orphan = (await storage.chats.create({ id: "grp_orphan", kind: "group", name: null, participants: [A, B], network: "loopback", networkId: null }))!;
      const cannot = (await rejectionOf(setChatTyping({ ...deps, lines: oneLine(textOnly) }, orphan.id, true))) as AppError;
      expect([cannot.code, cannot.message]).toEqual(["UNPROCESSABLE_CONTENT", "typing: the twilio network cannot show typing (line default)"]);
      const notOn = (await rejectionOf(setChatTyping(deps, orphan.id, true))) as AppError;
      expect([notOn.code, notOn.message]).toEqual(["CONFLICT", "chat grp_orphan is not on the network (its creation failed)"]);
      expect((await storage.chats.get(orphan.id))?.ourTyping).toBe(false);
    });

    test("a send into a group writes our typing's state only when it was on there", async () => {
      const { storage, deps } = await setup();
      const team = (await storage.chats.create({ id: "grp_quiet", kind: "group", name: null, participants: [A, B], network: "loopback", networkId: "quiet-guid" }))!;
      const stops: string[] = [];
      const chats = { ...storage.chats, stopOurTyping: (id: string, expiredOnly: boolean) => (stops.push(id), storage.chats.stopOurTyping(id, expiredOnly)) };
      const counted = { ...deps, storage: { ...storage, chats } };
      await sendMessage(counted, { chat_id: team.id, message: "typing off" });
      expect(stops).toEqual([]);
      await setChatTyping(deps, team.id, true);
      await sendMessage(counted, { chat_id: team.id, message: "typing on" });
      expect(stops).toEqual([team.id]);
    });

    test("the contact's: kept, and event contact.typing when it changes; stored as no message", async () => {
      const { storage } = await setup();
      await apply(storage, "loopback", { typing: [{ phone: A, typing: true }] });
      expect(await isContactTyping(storage, A)).toBe(true);
      await apply(storage, "loopback", { typing: [{ phone: A, typing: true }] });
      await apply(storage, "loopback", { typing: [{ phone: A, typing: false }] });
      expect(await isContactTyping(storage, A)).toBe(false);
      expect(await isContactTyping(storage, B)).toBe(false);
      expect((await eventsOf(storage)).map((e) => [e.type, e.data])).toEqual([
        ["contact.typing", { phone: A, typing: true }],
        ["contact.typing", { phone: A, typing: false }],
      ]);
      expect((await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 })).total).toBe(0);
    });
  });

  describe("read state", () => {
    test("a read receipt reads our message and the ones before it, never moving their status, each with message.read", async () => {
      const { storage, deps } = await setup();
      const first = await sendMessage(deps, { phone: A, message: "one" });
      const second = await sendMessage(deps, { phone: A, message: "two" });
      const at = Date.now() - 1000;
      await apply(storage, "loopback", { reads: [{ networkId: `loopback:${second.id}`, at }] });
      await apply(storage, "loopback", { reads: [{ networkId: `loopback:${second.id}`, at: at + 5 }, { networkId: "unknown", at }] });
      const page = (await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 })).messages;
      expect(page.map((m) => [m.id, m.status, m.read_at])).toEqual([
        [second.id, "delivered", new Date(at).toISOString().replace("Z", "000Z")],
        [first.id, "delivered", new Date(at).toISOString().replace("Z", "000Z")],
      ]);
      expect((await eventsOf(storage)).map((e) => [e.type, "id" in e.data ? e.data.id : undefined]).sort()).toEqual(
        [
          ["message.read", first.id],
          ["message.read", second.id],
        ].sort(),
      );
    });

    test("marking a conversation read zeroes unread and tells a network with read receipts; one without keeps it alone", async () => {
      const { storage, deps, calls } = await setup();
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "a" });
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "b" });
      expect((await getContact(storage, A)).unread).toBe(2);
      expect(await markConversationRead(deps, A)).toEqual({ phone: A, opted_out: false, opted_out_at: null, unread: 0, typing: false });
      expect(calls).toEqual([["markRead", A]]);
      const [latest] = (await listHistory(reader(storage), { phone: A, limit: 1, offset: 0 })).messages;
      expect(latest!.read_at).toMatch(/Z$/);

      const twilio = await setup(textOnly);
      await recordInbound(twilio.storage, envLineOf("twilio"), { phone: B, message: "c" });
      expect((await markConversationRead(twilio.deps, B)).unread).toBe(0);
    });
  });

  describe("edits and unsends", () => {
    test("the contact's apply to the record once, with their events", async () => {
      const { storage } = await setup();
      const { record } = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "helo", networkId: "in-1" });
      const t = Date.now() - 10_000;
      const edit = { networkId: "in-1", phone: A, kind: "edit" as const, message: "hello", at: t };
      expect((await apply(storage, "loopback", { edits: [edit] })).changed).toBe(1);
      expect((await apply(storage, "loopback", { edits: [edit, { ...edit, phone: B, at: t + 1 }] })).changed).toBe(0);
      let row = (await listHistory(reader(storage), { phone: A, limit: 1, offset: 0 })).messages[0]!;
      expect(row).toMatchObject({ id: record.id, message: "hello", edited_at: expect.any(String), unsent_at: null });
      const unsend = { networkId: "in-1", phone: A, kind: "unsend" as const, at: t + 2 };
      expect((await apply(storage, "loopback", { edits: [unsend, unsend] })).changed).toBe(1);
      row = (await listHistory(reader(storage), { phone: A, limit: 1, offset: 0 })).messages[0]!;
      expect(row).toMatchObject({ message: "", unsent_at: expect.any(String) });
      const listed = await eventsOf(storage);
      expect(listed.map((e) => e.type)).toEqual(["message.edited", "message.unsent"]);
      expect(listed[0]!.data).toMatchObject({ id: record.id, previous_message: "helo" });
    });

    test("ours: edited and unsent on the network within their windows, else 409 naming why; 422 where the network cannot", async () => {
      const { storage, deps, calls } = await setup();
      const sent = await sendMessage(deps, { phone: A, message: "see you at 5" });
      const edited = await editOurMessage(deps, sent.id, "see you at 6");
      expect(edited).toMatchObject({ message: "see you at 6", edited_at: expect.any(String) });
      expect(calls).toEqual([["edit", { networkId: `loopback:${sent.id}`, phone: A }, "see you at 6"]]);
      const [event] = (await eventsOf(storage)).filter((e) => e.type === "message.edited");
      expect(event!.data).toMatchObject({ message: "see you at 6", previous_message: "see you at 5" });
      for (let i = 2; i <= 5; i++) await editOurMessage(deps, sent.id, `edit ${i}`);
      expect(await codeOf(editOurMessage(deps, sent.id, "too many"))).toEqual({
        code: "CONFLICT",
        message: `message ${sent.id} cannot be edited: it was edited 5 times already`,
      });

      const { record: theirs } = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hi", networkId: "in-9" });
      expect((await codeOf(editOurMessage(deps, theirs.id, "x"))).message).toBe(`message ${theirs.id} cannot be edited: only our own messages can be`);
      expect((await codeOf(unsendOurMessage(deps, "nope"))).code).toBe("NOT_FOUND");

      const old = await sendMessage(deps, { phone: A, message: "old" });
      await sql(storage, `UPDATE messages SET timestamp = timestamp - 16 * 60 * 1000000 WHERE id = '${old.id}'`);
      expect((await codeOf(editOurMessage(deps, old.id, "x"))).message).toBe(`message ${old.id} cannot be edited: it was sent more than 15 minutes ago`);
      expect((await codeOf(unsendOurMessage(deps, old.id))).message).toBe(`message ${old.id} cannot be unsent: it was sent more than 2 minutes ago`);

      const oops = await sendMessage(deps, { phone: A, message: "oops" });
      expect(await unsendOurMessage(deps, oops.id)).toMatchObject({ message: "", unsent_at: expect.any(String) });
      expect(calls.at(-1)).toEqual(["unsend", { networkId: `loopback:${oops.id}`, phone: A }]);
      expect((await codeOf(unsendOurMessage(deps, oops.id))).message).toBe(`message ${oops.id} cannot be unsent: it was unsent`);
      expect((await eventsOf(storage)).filter((e) => e.type === "message.unsent")).toHaveLength(1);

      const twilio = (await setup(textOnly)).deps;
      const viaTwilio = await sendMessage(twilio, { phone: A, message: "hello" });
      expect(await codeOf(editOurMessage(twilio, viaTwilio.id, "x"))).toEqual({ code: "UNPROCESSABLE_CONTENT", message: "message: the twilio network cannot edit messages (line default)" });
      expect(await codeOf(unsendOurMessage(twilio, viaTwilio.id))).toEqual({ code: "UNPROCESSABLE_CONTENT", message: "unsend: the twilio network cannot unsend messages (line default)" });
    });
  });
});
