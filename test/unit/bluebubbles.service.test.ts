// Issue 24 on BlueBubbles, end to end below the API, on every dialect: the service functions
// (src/messages/reactions.ts, typing.ts, read-state.ts, edits.ts) with the real BlueBubbles
// driver against the stand-in server (test/support/fake-bluebubbles.ts), and the stand-in's
// webhooks read by the driver and applied by applyNetworkEvents to a real storage:
// - a tapback from the contact lands on our message, is an event, is never a message;
// - our reaction reaches the server and shows in history;
// - typing starts on the server, stops with our reply and is never stopped by a DELETE;
// - a read receipt sets read_at; marking read reaches the server and zeroes unread;
// - an edited and an unsent inbound message change the record once;
// - ours edited and unsent on the server; Apple ignoring it is 409 with nothing changed;
// - the Private API off: 422 naming the field, nothing changed.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Storage } from "../../src/db/port";
import { AppError } from "../../src/errors";
import { eventsOutput } from "../../src/events/schemas";
import { listEvents } from "../../src/events/service";
import { getContact } from "../../src/messages/contacts";
import { editOurMessage, unsendOurMessage } from "../../src/messages/edits";
import { applyNetworkEvents } from "../../src/messages/network-events";
import { reactToMessage, removeOurReaction } from "../../src/messages/reactions";
import { markConversationRead } from "../../src/messages/read-state";
import { listHistory, pollInbound, sendMessage } from "../../src/messages/service";
import { isContactTyping, setOurTyping } from "../../src/messages/typing";
import { createBlueBubblesNetwork } from "../../src/network/bluebubbles";
import type { NetworkDriver } from "../../src/network/driver";
import { bbMessage, bbNotification, startFakeBlueBubbles, type BbMessage, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import { dialects, quietLog, rejectionOf, storages, oneLine, reader, envLineOf } from "./helpers";

setDefaultTimeout(30_000);

const SECRET = "bb-service-secret";
const A = "+14155550123";

let fake: FakeBlueBubbles;
let network: NetworkDriver;
let receiver: ReturnType<typeof Bun.serve>;
/** The storage the stand-in's webhooks are applied to: the running test's. */
let current: Storage | undefined;

beforeAll(() => {
  fake = startFakeBlueBubbles({ privateApi: true });
  network = createBlueBubblesNetwork({ url: fake.url, password: fake.password, webhookSecret: SECRET, sendTimeoutMs: 10_000, log: quietLog });
  // What POST /webhooks/bluebubbles does: the driver reads it, the domain applies it.
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const { response, ...events } = await network.webhook!({ url: new URL(req.url), subpath: "", headers: req.headers, body: await req.text() });
      if (current) await applyNetworkEvents(current, envLineOf(network.name), events, quietLog, { maxMessageLength: 1600 });
      return response;
    },
  });
  fake.webhooks.push(`http://127.0.0.1:${receiver.port}/webhooks/bluebubbles?secret=${SECRET}`);
});
afterAll(async () => {
  await receiver?.stop(true);
  await fake?.stop();
});

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const err = await rejectionOf(promise);
  expect(err).toBeInstanceOf(AppError);
  return { code: (err as AppError).code, message: (err as AppError).message };
}

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  async function setup() {
    const storage = await fresh();
    current = storage;
    fake.privateApi.enabled = true;
    fake.appleIgnores = false;
    fake.addChat(A);
    return { storage, deps: { storage, lines: oneLine(network), log: quietLog } };
  }
  /** Our message sent through the stand-in: its record and the Mac's copy. */
  async function sendOurs(deps: Awaited<ReturnType<typeof setup>>["deps"], text: string) {
    const record = await sendMessage(deps, { phone: A, message: text });
    const row = (await deps.storage.messages.get(record.id))!;
    return { id: record.id, mac: fake.messages.find((m) => m.guid === row.networkId)! };
  }
  /** The contact's message, announced by the Mac and stored. */
  async function theirs(text: string): Promise<{ id: string; mac: BbMessage }> {
    const mac = bbMessage({ address: A, text });
    fake.messages.push(mac);
    await fake.emit("new-message", mac);
    const row = (await current!.messages.byNetworkId("bluebubbles", "inbound", mac.guid))!;
    return { id: row.id, mac };
  }
  const record = async (storage: Storage, id: string) => (await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).messages.find((m) => m.id === id)!;
  const eventTypes = async (storage: Storage) =>
    eventsOutput
      .parse({ success: true, ...(await listEvents(storage, { limit: 100 })) })
      .events.map((e) => e.type)
      .filter((t) => t !== "message.received" && t !== "message.status_updated");

  test("the contact's tapback lands on our message as their reaction (and its removal clears it): never stored, never polled", async () => {
    const { storage, deps } = await setup();
    const { id, mac } = await sendOurs(deps, "Your table is ready");
    await fake.contactReacts(mac, "love");
    expect((await record(storage, id)).reactions).toEqual([{ reaction: "love", direction: "inbound", phone: A, timestamp: expect.any(String) }]);
    await fake.contactReacts(mac, "-love");
    expect((await record(storage, id)).reactions).toEqual([]);
    expect((await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).total).toBe(1);
    expect((await pollInbound(reader(storage), { limit: 10 })).messages).toEqual([]);
    expect(await eventTypes(storage)).toEqual(["message.reaction_added", "message.reaction_removed"]);
  });

  test("our reaction reaches the server and stands in history; its echo is not the contact's; removing sends -<reaction>", async () => {
    const { storage, deps } = await setup();
    const { id, mac } = await theirs("Thanks!");
    const loved = await reactToMessage(deps, id, "love");
    expect(loved.reactions).toEqual([{ reaction: "love", direction: "outbound", phone: null, timestamp: expect.any(String) }]);
    expect(fake.requests.at(-1)!.body).toEqual({ chatGuid: `iMessage;-;${A}`, selectedMessageGuid: mac.guid, reaction: "love", partIndex: 0 });
    expect((await record(storage, id)).reactions.map((r) => r.direction)).toEqual(["outbound"]);
    expect((await removeOurReaction(deps, id)).reactions).toEqual([]);
    expect(fake.requests.at(-1)!.body.reaction).toBe("-love");
    expect((await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).total).toBe(1);
  });

  test("the Private API off: 422 naming the field for each action, nothing changed", async () => {
    const { storage, deps } = await setup();
    const { id } = await sendOurs(deps, "Soon");
    fake.privateApi.enabled = false;
    expect(await codeOf(reactToMessage(deps, id, "like"))).toEqual({ code: "UNPROCESSABLE_CONTENT", message: "reaction: the bluebubbles server's Private API is off" });
    expect((await codeOf(setOurTyping(deps, A, true))).message).toBe("typing: the bluebubbles server's Private API is off");
    expect((await codeOf(markConversationRead(deps, A))).message).toBe("read: the bluebubbles server's Private API is off");
    expect((await codeOf(editOurMessage(deps, id, "Later"))).message).toBe("message: the bluebubbles server's Private API is off");
    expect((await codeOf(unsendOurMessage(deps, id))).message).toBe("unsend: the bluebubbles server's Private API is off");
    const after = await record(storage, id);
    expect([after.reactions, after.message, after.edited_at, after.unsent_at]).toEqual([[], "Soon", null, null]);
    expect(await eventTypes(storage)).toEqual([]);
  });

  test("typing starts on the server and stops with our reply; a stop without a send is 422 and no DELETE; the contact's typing is kept", async () => {
    const { storage, deps } = await setup();
    const chat = `iMessage;-;${A}`;
    expect(await setOurTyping(deps, A, true)).toEqual({ typing: true });
    expect(fake.typing.has(chat)).toBe(true);
    expect((await codeOf(setOurTyping(deps, A, false))).code).toBe("UNPROCESSABLE_CONTENT");
    expect(fake.requests.some((r) => r.method === "DELETE")).toBe(false);
    await sendOurs(deps, "Here is your answer");
    expect(fake.typing.has(chat)).toBe(false);
    expect(await dialect.rows(storage, "SELECT phone FROM contacts WHERE our_typing_until IS NOT NULL")).toEqual([]);

    await fake.contactTypes(A, true);
    expect(await isContactTyping(storage, A)).toBe(true);
    await fake.contactTypes(A, false);
    expect(await isContactTyping(storage, A)).toBe(false);
    expect(await eventTypes(storage)).toEqual(["contact.typing", "contact.typing"]);
  });

  test("a read receipt sets read_at (the status stays); marking read reaches the server and zeroes unread", async () => {
    const { storage, deps } = await setup();
    const { id, mac } = await sendOurs(deps, "Did you see it?");
    const before = (await record(storage, id)).status;
    await fake.contactReads(mac);
    const read = await record(storage, id);
    expect(read.read_at).not.toBeNull();
    expect(read.status).toBe(before);
    expect(await eventTypes(storage)).toEqual(["message.read"]);

    await theirs("Yes");
    await theirs("Looks good");
    expect((await getContact(storage, A)).unread).toBe(2);
    expect((await markConversationRead(deps, A)).unread).toBe(0);
    expect(fake.reads.at(-1)).toBe(`iMessage;-;${A}`);
  });

  test("the contact's edit and unsend change the record once, also when the server repeats them late as new-message", async () => {
    const { storage } = await setup();
    const { id, mac } = await theirs("See you at 6");
    await fake.contactEdits(mac, "See you at 7");
    // The same edit again, as a new-message once the server's event cache forgot the guid.
    await fake.emit("new-message", bbNotification(mac));
    const edited = await record(storage, id);
    expect([edited.message, edited.edited_at !== null, edited.unsent_at]).toEqual(["See you at 7", true, null]);
    await fake.contactUnsends(mac);
    await fake.contactUnsends(mac, { late: true });
    const unsent = await record(storage, id);
    expect([unsent.message, unsent.unsent_at !== null]).toEqual(["", true]);
    expect((await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).total).toBe(1);
    expect(await eventTypes(storage)).toEqual(["message.edited", "message.unsent"]);
  });

  test("ours edited and unsent on the server; Apple ignoring it (200, dateEdited unchanged) is 409 with nothing changed", async () => {
    const { storage, deps } = await setup();
    const first = await sendOurs(deps, "Meet at 6");
    const edited = await editOurMessage(deps, first.id, "Meet at 7");
    expect([edited.message, first.mac.text]).toEqual(["Meet at 7", "Meet at 7"]);
    const second = await sendOurs(deps, "Oops");
    expect((await unsendOurMessage(deps, second.id)).unsent_at).not.toBeNull();
    expect(second.mac.partCount).toBe(0);

    fake.appleIgnores = true;
    const third = await sendOurs(deps, "Final");
    expect((await codeOf(editOurMessage(deps, third.id, "Changed"))).code).toBe("CONFLICT");
    expect((await codeOf(unsendOurMessage(deps, third.id))).code).toBe("CONFLICT");
    const kept = await record(storage, third.id);
    expect([kept.message, kept.edited_at, kept.unsent_at]).toEqual(["Final", null, null]);
  });
});
