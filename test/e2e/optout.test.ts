// Opt-outs in the core (docs/api.md "Opt-outs", README), with the real server: an inbound
// STOP-family word opts the contact out on every network (loopback, the Twilio and
// BlueBubbles stand-ins), every send path answers 403 FORBIDDEN and stores nothing, START
// opts back in; Twilio's OptOutType and its error 21610 map to the same state;
// GET /api/contacts/{phone}; a workflow's reply to an opted-out contact is skipped cleanly.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createClient } from "../../src/client";
import { AppError } from "../../src/errors";
import { createRemoteBackend } from "../../src/workflows/remote-backend";
import { bbMessage, blueBubblesEnv, postBlueBubblesWebhook, startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import { startFakeOpenAI } from "../support/fake-openai";
import {
  TEST_PUBLIC_URL,
  postTwilioWebhook,
  signTwilioRequest,
  startFakeTwilio,
  twilioEnv,
  twilioInboundParams,
  TEST_FROM,
  type FakeTwilio,
} from "../support/fake-twilio";
import { call, expectError, history, inbound, newPhone, send, trpcFailure } from "./api";
import { ROOT, runCli, startServer, type Server } from "./harness";

setDefaultTimeout(60_000);

const OPTED_OUT = "phone: the contact opted out by replying STOP";
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

interface Contact {
  phone: string;
  opted_out: boolean;
  opted_out_at: string | null;
  unread: number;
  typing: boolean;
}

const model = startFakeOpenAI({ kind: "text", text: "A generated reply" });
const cleanup: (() => unknown)[] = [];
let server: Server;

beforeAll(async () => {
  server = await startServer({ env: { OPENAI_API_KEY: "sk-local", OPENAI_BASE_URL: model.baseUrl } });
}, 60_000);
afterAll(async () => {
  server?.kill();
  for (const c of cleanup) await c();
  await model.stop();
}, 30_000);

async function contact(target: Server, phone: string, encode = true): Promise<Contact> {
  const reply = await call<{ success: boolean; contact: Contact }>(target, "GET", `/api/contacts/${encode ? encodeURIComponent(phone) : phone}`);
  if (reply.status !== 200) throw new Error(`contact ${phone}: ${reply.status} ${reply.text}`);
  expect(reply.body.success).toBe(true);
  return reply.body.contact;
}

async function total(target: Server, phone: string): Promise<number> {
  return (await history(target, phone)).total;
}

function expectOptedOut(reply: Awaited<ReturnType<typeof call>>): void {
  const error = expectError(reply, 403, "FORBIDDEN");
  expect(error.error.message).toBe(OPTED_OUT);
}

describe("on loopback", () => {
  test("STOP opts out: sends are 403 and store nothing; START opts back in", async () => {
    const phone = newPhone();
    expect(await contact(server, phone)).toEqual({ phone, opted_out: false, opted_out_at: null, unread: 0, typing: false });
    await send(server, phone, "hello");
    await inbound(server, phone, " Stop. ");
    const out = await contact(server, phone);
    expect(out.opted_out).toBe(true);
    expect(out.opted_out_at).toMatch(ISO);
    // The raw + in the path works as for history.
    expect(await contact(server, phone, false)).toEqual(out);

    const before = await total(server, phone);
    expectOptedOut(await call(server, "POST", "/api/send", { body: { phone, message: "are you there?" } }));
    expect(await total(server, phone)).toBe(before);

    // A text that only contains the word is a conversation, not a keyword.
    await inbound(server, phone, "stop please");
    expect((await contact(server, phone)).opted_out).toBe(true);
    await inbound(server, phone, "START");
    expect(await contact(server, phone)).toEqual({ phone, opted_out: false, opted_out_at: null, unread: 3, typing: false });
    await send(server, phone, "welcome back");
    expect((await history(server, phone)).messages[0]).toMatchObject({ message: "welcome back", status: "delivered" });
  });

  test("a 403 is not remembered by Idempotency-Key: after START the same key sends", async () => {
    const phone = newPhone();
    await inbound(server, phone, "UNSUBSCRIBE");
    const headers = { "Idempotency-Key": `optout-${randomBytes(6).toString("hex")}` };
    const body = { phone, message: "one try" };
    expectOptedOut(await call(server, "POST", "/api/send", { body, headers }));
    expectOptedOut(await call(server, "POST", "/api/send", { body, headers }));
    await inbound(server, phone, "unstop");
    const ok = await call<{ message_id: string }>(server, "POST", "/api/send", { body, headers });
    expect(ok.status).toBe(200);
    const again = await call<{ message_id: string }>(server, "POST", "/api/send", { body, headers });
    expect(again.body.message_id).toBe(ok.body.message_id);
    expect((await history(server, phone)).messages.filter((m) => m.direction === "outbound")).toHaveLength(1);
  });

  test("generate with auto_send is 403 before anything is generated; without it the text is written", async () => {
    const phone = newPhone();
    await inbound(server, phone, "quit");
    const asked = model.requests.length;
    const context = [{ role: "user", content: "hi" }];
    expectOptedOut(await call(server, "POST", "/api/generate", { body: { phone, context, auto_send: true } }));
    expect(model.requests.length).toBe(asked);
    expect(await total(server, phone)).toBe(1);
    const written = await call<{ sent: boolean }>(server, "POST", "/api/generate", { body: { phone, context } });
    expect(written.status).toBe(200);
    expect(written.body.sent).toBe(false);
  });

  test("GET /api/contacts/{phone}: 400 for a bad phone; the same over tRPC", async () => {
    expectError(await call(server, "GET", "/api/contacts/not-a-phone"), 400, "BAD_REQUEST");
    expect((await call<{ error: { message: string } }>(server, "GET", "/api/contacts/12345")).body.error.message).toStartWith("phone: ");
    const phone = newPhone();
    await inbound(server, phone, "REVOKE");
    const client = createClient({ url: server.url, apiKey: server.apiKey });
    const got = await client.contacts.get.query({ phone });
    expect(got.contact).toMatchObject({ phone, opted_out: true });
    expect((await trpcFailure(client.contacts.get.query({ phone: "nope" }))).code).toBe("BAD_REQUEST");
    // tRPC sends answer FORBIDDEN too.
    const refused = await trpcFailure(client.messages.send.mutate({ phone, message: "x" }));
    expect(refused).toMatchObject({ code: "FORBIDDEN", message: OPTED_OUT });
  });

  test("a workflow's reply to an opted-out contact is skipped ({ skipped: \"opted_out\" }), nothing stored, and the run succeeds", async () => {
    const dir = join(server.db.dir, `wf-${randomBytes(4).toString("hex")}`);
    mkdirSync(dir);
    writeFileSync(
      join(dir, "replier.ts"),
      `import { defineWorkflow, isSkipped } from ${JSON.stringify(resolve(ROOT, "src", "workflow.ts"))};
export default defineWorkflow({
  name: "optout-replier",
  schedule: "0 0 1 1 *",
  async run(ctx) {
    const skipped = [];
    for (const msg of await ctx.poll()) {
      const sent = await ctx.reply(msg, "got it: " + msg.message);
      if (isSkipped(sent)) skipped.push({ phone: msg.phone, optedOut: await ctx.optedOut(msg.phone), skipped: sent.skipped });
    }
    await ctx.state.set("skipped", skipped);
  },
});
`,
    );
    const runOnce = () => runCli(["workflows", "run", "optout-replier"], { DATABASE_URL: server.db.url, WORKFLOWS_DIR: dir });
    // A new workflow starts after the messages already stored.
    expect((await runOnce()).code).toBe(0);
    const talker = newPhone();
    const quitter = newPhone();
    await inbound(server, talker, "hello");
    await inbound(server, quitter, "STOP");
    const run = await runOnce();
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: "ok", handled: 2 });
    const [state] = await server.db.query<{ value: string }>("SELECT value FROM workflow_state WHERE workflow = ? AND key = ?", "optout-replier", "skipped");
    expect(JSON.parse(state!.value)).toEqual([{ phone: quitter, optedOut: true, skipped: "opted_out" }]);
    expect((await history(server, quitter)).messages.map((m) => m.direction)).toEqual(["inbound"]);
    const talk = (await history(server, talker)).messages;
    expect(talk[0]).toMatchObject({ direction: "outbound", message: "got it: hello", reply_to: talk[1]!.id });
  });

  test("the CLI's send to an opted-out contact exits non-zero with the 403's message and stores nothing", async () => {
    const phone = newPhone();
    await inbound(server, phone, "cancel");
    const run = await runCli(["send", phone, "hi from the CLI"], { DATABASE_URL: server.db.url });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(OPTED_OUT);
    expect(await total(server, phone)).toBe(1);
  });

  test("a remote worker's backend reads the API's 403 (reason OPTED_OUT) as the same skip as the local one", async () => {
    const phone = newPhone();
    await inbound(server, phone, "end");
    const backend = createRemoteBackend(createClient({ url: server.url, apiKey: server.apiKey }));
    expect(await backend.optedOut(phone)).toBe(true);
    expect(await backend.send({ phone, message: "hi" }, { key: `workflow:r:reply:${phone}`, anyText: true })).toEqual({ skipped: "opted_out" });
    // The API itself answers the refusal as before, saying why.
    const refused = await call<{ error: { code: string; message: string; reason: string } }>(server, "POST", "/api/send", { body: { phone, message: "hi", automated: true } });
    expect([refused.status, refused.body.error]).toEqual([403, { code: "FORBIDDEN", message: OPTED_OUT, reason: "OPTED_OUT" }]);
    expect(await total(server, phone)).toBe(1);
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

  const post = (params: Record<string, string>) =>
    postTwilioWebhook(twilio.url, "/webhooks/twilio", params, signTwilioRequest(fake.authToken, TEST_PUBLIC_URL + "/webhooks/twilio", params));

  test("STOP through the webhook opts out: 403, nothing stored, Twilio not asked; START sends again", async () => {
    const phone = newPhone();
    expect((await post(fake.texted({ from: phone, body: "stop" }))).status).toBe(200);
    expect((await contact(twilio, phone)).opted_out).toBe(true);
    const asked = fake.sends.length;
    expectOptedOut(await call(twilio, "POST", "/api/send", { body: { phone, message: "hello" } }));
    expect(fake.sends.length).toBe(asked);
    expect(await total(twilio, phone)).toBe(1);
    await post(fake.texted({ from: phone, body: "START" }));
    expect((await contact(twilio, phone)).opted_out).toBe(false);
    await send(twilio, phone, "welcome back");
    expect(fake.sends.at(-1)!.body).toMatchObject({ To: phone, Body: "welcome back" });
  });

  test("OptOutType (Advanced Opt-Out) decides, whatever the word", async () => {
    const phone = newPhone();
    const params = { ...twilioInboundParams({ accountSid: fake.accountSid, from: phone, to: TEST_FROM, body: "Arrêt" }), OptOutType: "STOP" };
    expect((await post(params)).status).toBe(200);
    expect((await contact(twilio, phone)).opted_out).toBe(true);
    await post({ ...twilioInboundParams({ accountSid: fake.accountSid, from: phone, to: TEST_FROM, body: "Reprendre" }), OptOutType: "START" });
    expect((await contact(twilio, phone)).opted_out).toBe(false);
  });

  test("Twilio's 21610 (a STOP we never got): the message stays failed, the contact is opted out, 403; then refused before Twilio", async () => {
    const phone = newPhone();
    fake.optedOut.add(phone);
    const reply = await call(twilio, "POST", "/api/send", { body: { phone, message: "hello?" } });
    expectOptedOut(reply);
    const { messages } = await history(twilio, phone);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ status: "failed", direction: "outbound" });
    expect(messages[0]!.error).toContain("21610");
    expect((await contact(twilio, phone)).opted_out).toBe(true);
    const asked = fake.sends.length;
    expectOptedOut(await call(twilio, "POST", "/api/send", { body: { phone, message: "again" } }));
    expect(fake.sends.length).toBe(asked);
    expect(await total(twilio, phone)).toBe(1);
    // START clears both lists.
    await post(fake.texted({ from: phone, body: "start" }));
    await send(twilio, phone, "back");
  });
});

describe("on the BlueBubbles stand-in", () => {
  const secret = randomBytes(24).toString("base64url");
  let fake: FakeBlueBubbles;
  let bb: Server;
  beforeAll(async () => {
    fake = startFakeBlueBubbles();
    bb = await startServer({
      env: blueBubblesEnv(fake, secret),
    });
    cleanup.push(() => bb.kill(), () => fake.stop());
  }, 60_000);

  test("an inbound STOP opts out: 403 and no send to the Mac; START lets sends through", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    const stop = await postBlueBubblesWebhook(bb.url, secret, { type: "new-message", data: bbMessage({ address: phone, text: "STOP!" }) });
    expect(stop.status).toBe(200);
    expect((await contact(bb, phone)).opted_out).toBe(true);
    const asked = fake.sends.length;
    expectOptedOut(await call(bb, "POST", "/api/send", { body: { phone, message: "hello" } }));
    expect(fake.sends.length).toBe(asked);
    expect(await total(bb, phone)).toBe(1);
    await postBlueBubblesWebhook(bb.url, secret, { type: "new-message", data: bbMessage({ address: phone, text: "Start" }) });
    expect((await contact(bb, phone)).opted_out).toBe(false);
    await send(bb, phone, "welcome back");
    expect(fake.sends.at(-1)!.body).toMatchObject({ message: "welcome back" });
  });
});
