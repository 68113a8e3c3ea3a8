// Threaded replies (docs/api.md "Replies", docs/networks.md), with the real server:
// `reply_to` on POST /api/send (a message with the same contact, else 400 naming the
// field), kept in the record (history, poll); the loopback webhook takes `reply_to`;
// BlueBubbles sends it threaded (private-api, selectedMessageGuid = the replied message's
// guid, partIndex 0) and reads an inbound `threadOriginatorGuid` back into `reply_to`;
// Twilio keeps it without sending it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { bbMessage, blueBubblesEnv, postBlueBubblesWebhook, startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import { startFakeTwilio, twilioEnv, type FakeTwilio } from "../support/fake-twilio";
import { call, expectBadField, expectError, history, inbound, newPhone, poll, type MessageRecord } from "./api";
import { startServer, type EnvOverlay, type Server } from "./harness";

setDefaultTimeout(60_000);

type Threaded = MessageRecord;

const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup) await c();
}, 30_000);

async function sendReply(target: Server, phone: string, message: string, reply_to?: string) {
  const reply = await call<{ message_id: string; status: string }>(target, "POST", "/api/send", { body: { phone, message, ...(reply_to === undefined ? {} : { reply_to }) } });
  if (reply.status !== 200) throw new Error(`send: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function record(target: Server, phone: string, id: string): Promise<Threaded> {
  const found = (await history(target, phone, "limit=100")).messages.find((m) => m.id === id);
  if (!found) throw new Error(`message ${id} not in the history of ${phone}`);
  return found as Threaded;
}

describe("on loopback", () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer();
    cleanup.push(() => server.kill());
  }, 60_000);

  test("reply_to is kept and shown; a send without it shows null", async () => {
    const phone = newPhone();
    const question = await inbound(server, phone, "Is it open?");
    const answer = await sendReply(server, phone, "Yes, until 8", question.message_id);
    expect((await record(server, phone, answer.message_id)).reply_to).toBe(question.message_id);
    // A reply to our own message is a reply too.
    const followUp = await sendReply(server, phone, "And on Sunday until 6", answer.message_id);
    expect((await record(server, phone, followUp.message_id)).reply_to).toBe(answer.message_id);
    const plain = await sendReply(server, phone, "no thread");
    expect((await record(server, phone, plain.message_id)).reply_to).toBeNull();
    expect((await record(server, phone, question.message_id)).reply_to).toBeNull();
  });

  test("reply_to: 400 naming the field for an unknown id, another contact's message, or a wrong type; nothing stored", async () => {
    const phone = newPhone();
    const other = newPhone();
    const theirs = await inbound(server, other, "mine");
    const unknown = await call<{ error: { message: string } }>(server, "POST", "/api/send", { body: { phone, message: "x", reply_to: "01900000-0000-7000-8000-000000000000" } });
    expectError(unknown, 400, "BAD_REQUEST");
    expect(unknown.body.error.message).toBe("reply_to: no message with this id");
    const crossed = await call<{ error: { message: string } }>(server, "POST", "/api/send", { body: { phone, message: "x", reply_to: theirs.message_id } });
    expectError(crossed, 400, "BAD_REQUEST");
    expect(crossed.body.error.message).toBe("reply_to: that message is with another contact");
    expectBadField(await call(server, "POST", "/api/send", { body: { phone, message: "x", reply_to: 42 } }), "reply_to");
    expectBadField(await call(server, "POST", "/api/send", { body: { phone, message: "x", reply_to: "" } }), "reply_to");
    expect((await history(server, phone)).total).toBe(0);
  });

  test("the loopback webhook takes reply_to: shown in history and poll; an unknown one is 400", async () => {
    const phone = newPhone();
    const ours = await sendReply(server, phone, "How was your stay?");
    const since = (await record(server, phone, ours.message_id)).timestamp;
    const answer = await call<{ message_id: string }>(server, "POST", "/webhooks/loopback", { body: { phone, message: "Lovely", reply_to: ours.message_id } });
    expect(answer.status).toBe(200);
    expect((await record(server, phone, answer.body.message_id)).reply_to).toBe(ours.message_id);
    const polled = (await poll(server, { since, phone })).messages as Threaded[];
    expect(polled.map((m) => [m.id, m.reply_to])).toEqual([[answer.body.message_id, ours.message_id]]);
    const bad = await call<{ error: { message: string } }>(server, "POST", "/webhooks/loopback", { body: { phone, message: "?", reply_to: "nope" } });
    expectError(bad, 400, "BAD_REQUEST");
    expect(bad.body.error.message).toStartWith("reply_to: ");
  });
});

const SECRET = randomBytes(24).toString("base64url");
const bbEnv = (fake: FakeBlueBubbles): EnvOverlay => blueBubblesEnv(fake, SECRET);

describe("on the BlueBubbles stand-in with the Private API", () => {
  let fake: FakeBlueBubbles;
  let bb: Server;
  beforeAll(async () => {
    fake = startFakeBlueBubbles({ privateApi: true });
    bb = await startServer({ env: bbEnv(fake) });
    fake.webhooks.push(`${bb.url}/webhooks/bluebubbles?secret=${SECRET}`);
    cleanup.push(() => bb.kill(), () => fake.stop());
  }, 60_000);

  test("a reply is sent threaded: private-api, selectedMessageGuid = the replied message's guid, partIndex 0", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    const question = bbMessage({ address: phone, text: "Do you deliver?" });
    fake.messages.push(question);
    expect((await postBlueBubblesWebhook(bb.url, SECRET, { type: "new-message", data: question })).status).toBe(200);
    const stored = (await history(bb, phone)).messages[0]!;
    expect(stored.message).toBe("Do you deliver?");

    const answer = await sendReply(bb, phone, "Yes, within 5 km", stored.id);
    const request = fake.sends.at(-1)!;
    expect(request.path).toBe("/api/v1/message/text");
    expect(request.body).toMatchObject({ method: "private-api", selectedMessageGuid: question.guid, partIndex: 0, message: "Yes, within 5 km" });
    expect(request.body.tempGuid).toContain(answer.message_id);
    // The Mac sent it as a reply in the thread.
    expect(fake.sent.at(-1)).toMatchObject({ text: "Yes, within 5 km", threadOriginatorGuid: question.guid });
    expect((await record(bb, phone, answer.message_id)).reply_to).toBe(stored.id);

    // A reply to our own message threads on the guid the server gave it.
    const more = await sendReply(bb, phone, "Free above 20 €", answer.message_id);
    expect(fake.sends.at(-1)!.body).toMatchObject({ selectedMessageGuid: fake.sent.at(-2)!.guid, method: "private-api" });
    expect((await record(bb, phone, more.message_id)).reply_to).toBe(answer.message_id);

    // Without reply_to the send is the plain AppleScript one.
    await sendReply(bb, phone, "Anything else?");
    expect(fake.sends.at(-1)!.body).toMatchObject({ method: "apple-script" });
    expect(fake.sends.at(-1)!.body.selectedMessageGuid).toBeUndefined();
  });

  test("an inbound threadOriginatorGuid becomes reply_to (our sent or received message), in history and poll", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    const ours = await sendReply(bb, phone, "Your table is ready");
    const ourGuid = fake.sent.at(-1)!.guid;
    const since = (await record(bb, phone, ours.message_id)).timestamp;
    const reply = bbMessage({ address: phone, text: "On my way", threadOriginatorGuid: ourGuid });
    expect((await postBlueBubblesWebhook(bb.url, SECRET, { type: "new-message", data: reply })).status).toBe(200);
    const second = bbMessage({ address: phone, text: "5 minutes", threadOriginatorGuid: reply.guid });
    await postBlueBubblesWebhook(bb.url, SECRET, { type: "new-message", data: second });
    const unknown = bbMessage({ address: phone, text: "about an old one", threadOriginatorGuid: "AAAA-NOT-OURS" });
    await postBlueBubblesWebhook(bb.url, SECRET, { type: "new-message", data: unknown });

    const polled = (await poll(bb, { since, phone })).messages as Threaded[];
    expect(polled.map((m) => m.message)).toEqual(["On my way", "5 minutes", "about an old one"]);
    expect(polled[0]!.reply_to).toBe(ours.message_id);
    expect(polled[1]!.reply_to).toBe(polled[0]!.id);
    expect(polled[2]!.reply_to).toBeNull();
    expect((await record(bb, phone, polled[0]!.id)).reply_to).toBe(ours.message_id);
  });
});

describe("on a BlueBubbles stand-in without the Private API", () => {
  test("a threaded send fails as the server says (the message stays failed, 502); plain sends still go", async () => {
    const fake = startFakeBlueBubbles();
    const bb = await startServer({ env: bbEnv(fake) });
    cleanup.push(() => bb.kill(), () => fake.stop());
    const phone = newPhone();
    fake.addChat(phone);
    const question = bbMessage({ address: phone, text: "hello?" });
    await postBlueBubblesWebhook(bb.url, SECRET, { type: "new-message", data: question });
    const stored = (await history(bb, phone)).messages[0]!;
    const refused = await call<{ error: { message: string } }>(bb, "POST", "/api/send", { body: { phone, message: "hi", reply_to: stored.id } });
    expectError(refused, 502, "BAD_GATEWAY");
    expect(refused.body.error.message).toContain("iMessage Private API is not enabled!");
    const failed = (await history(bb, phone)).messages[0] as Threaded;
    expect(failed).toMatchObject({ status: "failed", reply_to: stored.id });
    await sendReply(bb, phone, "hi");
  });
});

describe("on the Twilio stand-in", () => {
  let fake: FakeTwilio;
  let twilio: Server;
  beforeAll(async () => {
    fake = startFakeTwilio();
    twilio = await startServer({ env: twilioEnv(fake) });
    cleanup.push(() => twilio.kill(), () => fake.stop());
  }, 60_000);

  test("reply_to is kept in the record, not sent (SMS has no threads)", async () => {
    const phone = newPhone();
    const first = await sendReply(twilio, phone, "first");
    const second = await sendReply(twilio, phone, "second", first.message_id);
    expect((await record(twilio, phone, second.message_id)).reply_to).toBe(first.message_id);
    expect(Object.keys(fake.sends.at(-1)!.body).sort()).toEqual(["Body", "From", "StatusCallback", "To"]);
  });
});
