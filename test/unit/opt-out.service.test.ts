import { FakeListChatModel } from "@langchain/core/utils/testing";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Storage } from "../../src/db/port";
import { AppError } from "../../src/errors";
import { createGenerator } from "../../src/generator/generator";
import { generateReply } from "../../src/generator/service";
import { getContact } from "../../src/messages/contacts";
import { applyNetworkEvents } from "../../src/messages/network-events";
import { OPTED_OUT_MESSAGE } from "../../src/messages/opt-out";
import { recordInbound, sendMessage, type MessagingDeps } from "../../src/messages/service";
import { RecipientOptedOut, webhookEvents, type NetworkDriver } from "../../src/network/driver";
import { createLoopbackNetwork } from "../../src/network/loopback";
import { dialects, quietLog, rejectionOf, storages, TEXT_ONLY, oneLine, envLineOf } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";

/** A network that records what it was asked to send. */
function recordingNetwork(name = "loopback") {
  const sent: Parameters<NetworkDriver["send"]>[0][] = [];
  const network: NetworkDriver = {
    name,
    capabilities: TEXT_ONLY,
    async send(m) {
      sent.push(m);
      return { networkId: `${name}:${m.id}`, status: "delivered" };
    },
  };
  return { network, sent };
}

const total = async (storage: Storage, phone: string) => (await storage.messages.history(phone, 1, 0)).total;

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  async function setup(network: NetworkDriver = createLoopbackNetwork()) {
    const storage = await fresh();
    const deps: MessagingDeps = { storage, lines: oneLine(network), log: quietLog };
    return { storage, deps };
  }

  describe("inbound keywords", () => {
    test("STOP opts the contact out, START back in; other texts change nothing", async () => {
      const { storage } = await setup();
      expect(await getContact(storage, A)).toEqual({ phone: A, opted_out: false, opted_out_at: null, unread: 0, typing: false });
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "stop please" });
      expect((await getContact(storage, A)).opted_out).toBe(false);
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: " Stop. " });
      const out = await getContact(storage, A);
      expect(out.opted_out).toBe(true);
      expect(Date.parse(out.opted_out_at!)).toBeGreaterThan(Date.now() - 60_000);
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hello again" });
      expect((await getContact(storage, A)).opted_out).toBe(true);
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "START" });
      expect(await getContact(storage, A)).toEqual({ phone: A, opted_out: false, opted_out_at: null, unread: 4, typing: false });
      expect((await getContact(storage, B)).opted_out).toBe(false);
    });

    test("a duplicate (same network id) changes nothing: a STOP redelivered after START does not opt out again", async () => {
      const { storage } = await setup();
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "STOP", networkId: "n-1" });
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "START", networkId: "n-2" });
      const again = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "STOP", networkId: "n-1" });
      expect(again.duplicate).toBe(true);
      expect((await getContact(storage, A)).opted_out).toBe(false);
      expect(await total(storage, A)).toBe(2);
    });

    test("the network's OptOutType decides (a keyword of the account's own)", async () => {
      const { storage } = await setup();
      await applyNetworkEvents(storage, envLineOf("twilio"), webhookEvents([{ phone: A, message: "ARRET", networkId: "SM1", optOutType: "STOP" }], []), quietLog, {
        maxMessageLength: 1600,
      });
      expect((await getContact(storage, A)).opted_out).toBe(true);
      await applyNetworkEvents(storage, envLineOf("twilio"), webhookEvents([{ phone: A, message: "help", networkId: "SM2", optOutType: "HELP" }], []), quietLog, {
        maxMessageLength: 1600,
      });
      expect((await getContact(storage, A)).opted_out).toBe(true);
    });
  });

  describe("sends to an opted-out contact", () => {
    test("are FORBIDDEN with the contract's message, and nothing is stored or sent", async () => {
      const { network, sent } = recordingNetwork();
      const { storage, deps } = await setup(network);
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "STOP" });
      const err = await rejectionOf(sendMessage(deps, { phone: A, message: "hello" }));
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("FORBIDDEN");
      expect((err as AppError).message).toBe(OPTED_OUT_MESSAGE);
      expect(sent).toEqual([]);
      expect(await total(storage, A)).toBe(1);
      // Another contact is not affected, and START lets the contact be texted again.
      await sendMessage(deps, { phone: B, message: "hello" });
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "start" });
      expect((await sendMessage(deps, { phone: A, message: "welcome back" })).status).toBe("delivered");
    });

    test("generate with auto_send is refused before anything is generated", async () => {
      const { storage, deps } = await setup();
      const model = new FakeListChatModel({ responses: ["never"] });
      const generator = createGenerator({ chatModel: model, model: "fake", timeoutMs: 1000 });
      await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "UNSUBSCRIBE" });
      const gdeps = { ...deps, generator, config: { MAX_MESSAGE_LENGTH: 1600 } };
      const err = await rejectionOf(generateReply(gdeps, { phone: A, context: [{ role: "user", content: "hi" }], autoSend: true }));
      expect((err as AppError).code).toBe("FORBIDDEN");
      expect(model.i).toBe(0);
      expect(await dialect.rows(storage, "SELECT id FROM generations")).toEqual([]);
      // Without auto_send it is only text: written, not sent.
      const reply = await generateReply(gdeps, { phone: A, context: [{ role: "user", content: "hi" }] });
      expect(reply).toMatchObject({ generated_message: "never", sent: false });
    });

    test("the network's own opt-out (RecipientOptedOut): the message stays failed, the contact is opted out, FORBIDDEN", async () => {
      const refusing: NetworkDriver = {
        name: "twilio",
        capabilities: TEXT_ONLY,
        async send() {
          throw new RecipientOptedOut("twilio: Attempt to send to unsubscribed recipient (error 21610)");
        },
      };
      const { storage, deps } = await setup(refusing);
      const err = await rejectionOf(sendMessage(deps, { phone: A, message: "hello" }));
      expect((err as AppError).code).toBe("FORBIDDEN");
      expect((err as AppError).message).toBe(OPTED_OUT_MESSAGE);
      const { rows } = await storage.messages.history(A, 10, 0);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: "failed", error: "twilio: Attempt to send to unsubscribed recipient (error 21610)" });
      expect((await getContact(storage, A)).opted_out).toBe(true);
      // The next send is refused before storing.
      expect(((await rejectionOf(sendMessage(deps, { phone: A, message: "again" }))) as AppError).code).toBe("FORBIDDEN");
      expect(await total(storage, A)).toBe(1);
    });
  });

  describe("reply_to", () => {
    test("kept on the message, the record says it, and the network gets the replied message's own id", async () => {
      const { network, sent } = recordingNetwork();
      const { storage, deps } = await setup(network);
      const { record: inbound } = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "question?", networkId: "net-q" });
      const reply = await sendMessage(deps, { phone: A, message: "answer", reply_to: inbound.id });
      expect(reply.reply_to).toBe(inbound.id);
      expect((await storage.messages.get(reply.id))?.replyTo).toBe(inbound.id);
      expect(sent.at(-1)).toMatchObject({ text: "answer", replyTo: "net-q" });
      const plain = await sendMessage(deps, { phone: A, message: "no thread" });
      expect(plain.reply_to).toBeNull();
      expect(sent.at(-1)?.replyTo).toBeUndefined();
    });

    test("a replied message of another line is kept, not sent as a thread", async () => {
      const { network, sent } = recordingNetwork("bluebubbles");
      const storage = await fresh();
      const deps: MessagingDeps = { storage, lines: oneLine(network, createLoopbackNetwork()), log: quietLog };
      const { record: inbound } = await recordInbound(storage, { id: "ln_loopback", network: "loopback" }, { phone: A, message: "old", networkId: "lb-1" });
      // A reply goes on the line of what it answers unless a line is named.
      const reply = await sendMessage(deps, { phone: A, message: "answer", reply_to: inbound.id, line: "default" });
      expect(reply.line_id).toBe("ln_default");
      expect(reply.reply_to).toBe(inbound.id);
      expect(sent.at(-1)?.replyTo).toBeUndefined();
    });

    test("an unknown id or another contact's message is BAD_REQUEST naming reply_to, and nothing is stored", async () => {
      const { storage, deps } = await setup();
      const { record: fromB } = await recordInbound(storage, envLineOf("loopback"), { phone: B, message: "hi" });
      const unknown = (await rejectionOf(sendMessage(deps, { phone: A, message: "x", reply_to: "nope" }))) as AppError;
      expect(unknown.code).toBe("BAD_REQUEST");
      expect(unknown.message).toBe("reply_to: no message with this id");
      const other = (await rejectionOf(sendMessage(deps, { phone: A, message: "x", reply_to: fromB.id }))) as AppError;
      expect(other.code).toBe("BAD_REQUEST");
      expect(other.message).toBe("reply_to: that message is with another contact");
      expect(await total(storage, A)).toBe(0);
    });

    test("inbound: the network's id of the replied message becomes reply_to (ours, sent or received, same contact)", async () => {
      const { storage, deps } = await setup(recordingNetwork("bluebubbles").network);
      const ours = await sendMessage(deps, { phone: A, message: "how was it?" });
      const apply = (m: { phone: string; networkId: string; replyToNetworkId: string }) =>
        applyNetworkEvents(storage, envLineOf("bluebubbles"), webhookEvents([{ ...m, message: "reply" }], []), quietLog, { maxMessageLength: 1600 });
      await apply({ phone: A, networkId: "in-1", replyToNetworkId: `bluebubbles:${ours.id}` });
      await apply({ phone: A, networkId: "in-2", replyToNetworkId: "in-1" });
      await apply({ phone: A, networkId: "in-3", replyToNetworkId: "unknown-guid" });
      await apply({ phone: B, networkId: "in-4", replyToNetworkId: "in-1" });
      const byNet = async (id: string) => (await storage.messages.byNetworkId("bluebubbles", "inbound", id))?.replyTo;
      expect(await byNet("in-1")).toBe(ours.id);
      expect(await byNet("in-2")).toBe((await storage.messages.byNetworkId("bluebubbles", "inbound", "in-1"))!.id);
      expect(await byNet("in-3")).toBeNull();
      expect(await byNet("in-4")).toBeNull();
    });
  });
});
