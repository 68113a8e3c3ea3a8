// Issue 33's "done when", against the real server with the shipped autoresponder (docs/supervision.md):
// in a supervised chat its reply is a draft that nothing sends until approved (edited), then sent
// once; a rejected draft is never sent; an operator's handoff silences it for that conversation only,
// until the timeout hands it back; "human" from the contact does the same and pushes
// chat.handoff_requested to a webhook endpoint; a STOP in one group or from one contact leaves it
// answering everyone else. Then the same rules for a worker apart from the API (TEXTWIRE_URL).
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeOpenAI } from "../support/fake-openai";
import { startReceiver } from "../support/webhook-receiver";
import { call, expectError, history, inbound, newPhone, type MessageRecord } from "./api";
import { ROOT, spawnServer, startServer, testDatabase, waitFor, type Server } from "./harness";

setDefaultTimeout(120_000);

const model = startFakeOpenAI({ kind: "text", text: "We are on it" });
const receiver = startReceiver();
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup) await c();
  receiver.stop();
  await model.stop();
}, 30_000);

const dm = (phone: string) => `dm_${phone.slice(1)}`;
const outbound = async (server: Server, phone: string) => (await history(server, phone)).messages.filter((m) => m.direction === "outbound");
type Chat = { id: string; mode: string; previous_mode: string | null; human_until: string | null };
const chat = async (server: Server, id: string) => (await call<{ chat: Chat }>(server, "GET", `/api/chats/${id}`)).body.chat;
const drafts = async (server: Server) => (await call<{ drafts: MessageRecord[]; total: number }>(server, "GET", "/api/drafts")).body;
const groupMessage = (server: Server, phone: string, message: string, group: { id: string; participants: string[] }) =>
  call(server, "POST", "/webhooks/loopback", { body: { phone, message, chat: { ...group, name: "Team" } } });

test("the shipped autoresponder in all three modes: drafts approved (edited) once or rejected, handoffs by a person and by keyword, STOPs that hold back no one else", async () => {
  const server = await startServer({
    env: { WORKFLOWS_DIR: join(ROOT, "workflows"), OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: model.baseUrl, HANDOFF_MINUTES: "0.25", ALLOW_PRIVATE_URLS: "true" },
  });
  cleanup.push(() => server.kill());
  const endpoint = await call(server, "POST", "/api/webhook-endpoints", { body: { url: receiver.url, events: ["chat.handoff_requested"] } });
  expect(endpoint.status).toBe(201);

  const [supervised, operated, asking, stopping, plain] = [newPhone(), newPhone(), newPhone(), newPhone(), newPhone()];
  const team = { id: `team-${Date.now()}`, participants: [newPhone(), newPhone()] };
  // Each contact writes first (its chat exists); then the operator sets one supervised and takes another over.
  for (const phone of [supervised, operated, stopping]) await inbound(server, phone, "hello");
  expect((await call<{ chat: Chat }>(server, "PATCH", `/api/chats/${dm(supervised)}`, { body: { mode: "supervised" } })).body.chat.mode).toBe("supervised");
  expectError(await call(server, "PATCH", `/api/chats/${dm(supervised)}`, { body: { mode: "robot" } }), 400, "BAD_REQUEST");
  const taken = await call<{ status: string }>(server, "POST", "/api/send", { body: { phone: operated, message: "Hi, Sam here", handoff: true } });
  expect(taken.status).toBe(200);
  expect(await chat(server, dm(operated))).toMatchObject({ mode: "human", previous_mode: "auto" });
  await inbound(server, supervised, "where is my order?");
  await inbound(server, stopping, "STOP");
  await inbound(server, asking, "Human!");
  await inbound(server, operated, "thanks Sam, one more thing");
  await groupMessage(server, team.participants[0]!, "textwire, when do you open?", team);
  await groupMessage(server, team.participants[1]!, "STOP", team);
  await inbound(server, plain, "hi there");

  // The autoresponder answers the contact with nothing in its way, and drafts in the supervised chat.
  await waitFor("a reply to the plain contact", 30_000, async () => (await outbound(server, plain)).length > 0);
  await waitFor("a draft in the supervised chat", 30_000, async () => (await drafts(server)).total > 0);
  const [draft] = (await drafts(server)).drafts;
  expect(draft).toMatchObject({ phone: supervised, status: "draft", message: "We are on it", direction: "outbound" });
  expect((await outbound(server, plain)).map((m) => [m.message, m.status])).toEqual([["We are on it", "delivered"]]);

  // "human" from the contact: its chat is human, and the endpoint hears of it.
  await waitFor("chat.handoff_requested at the endpoint", 15_000, () => receiver.received.some((r) => r.body.includes("chat.handoff_requested")));
  const pushed = JSON.parse(receiver.received.find((r) => r.body.includes("chat.handoff_requested"))!.body) as { type: string; data: { chat: Chat; by: null } };
  expect(pushed).toMatchObject({ type: "chat.handoff_requested", data: { chat: { id: dm(asking), mode: "human" }, by: null } });

  // Approved with an edit: sent once, the same record.
  const approved = await call<{ message: MessageRecord }>(server, "POST", `/api/messages/${draft!.id}/approve`, { body: { message: "We are on it: it ships today" } });
  expect(approved.status).toBe(200);
  expect(approved.body.message).toMatchObject({ id: draft!.id, message: "We are on it: it ships today", status: "delivered" });
  expectError(await call(server, "POST", `/api/messages/${draft!.id}/approve`, { body: {} }), 409, "CONFLICT");
  // A second text in the supervised chat: its draft is rejected and never goes out.
  await inbound(server, supervised, "and my refund?");
  await waitFor("a second draft", 30_000, async () => (await drafts(server)).drafts.some((d) => d.id !== draft!.id));
  const second = (await drafts(server)).drafts.find((d) => d.id !== draft!.id)!;
  expect((await call<{ message: MessageRecord }>(server, "POST", `/api/messages/${second.id}/reject`)).body.message.status).toBe("rejected");

  await Bun.sleep(6_000); // more ticks: anything sent twice, or to the silenced, would show now
  expect((await outbound(server, supervised)).map((m) => [m.id, m.message, m.status])).toEqual([
    [second.id, "We are on it", "rejected"],
    [draft!.id, "We are on it: it ships today", "delivered"],
  ]);
  // The operator's conversation, the one that asked for a person, the opted-out one and the muted group: no bot reply.
  expect((await outbound(server, operated)).map((m) => m.message)).toEqual(["Hi, Sam here"]);
  expect(await outbound(server, asking)).toEqual([]);
  expect(await outbound(server, stopping)).toEqual([]);
  expect((await outbound(server, plain)).length).toBe(1);
  const runs = await server.db.query<{ status: string; error: string | null }>("SELECT status, error FROM workflow_runs WHERE workflow = 'autoresponder'");
  expect(runs.filter((r) => r.status !== "ok")).toEqual([]);

  // HANDOFF_MINUTES (15 s) after the operator's send, the chat is handed back (within 10 s of its time), by nobody.
  await waitFor("the operated chat back in auto", 40_000, async () => (await chat(server, dm(operated))).mode === "auto");
  const events = (await call<{ events: { type: string; data: { chat: Chat; from: string; to: string; by: string | null } }[] }>(server, "GET", "/api/events?type=chat.mode_changed&limit=100")).body.events;
  expect(events.filter((e) => e.data.chat.id === dm(operated)).map((e) => [e.data.from, e.data.to, e.data.by === null])).toEqual([
    ["auto", "human", false],
    ["human", "auto", true],
  ]);
  // Back in auto, the bot answers the operated contact's next text.
  await inbound(server, operated, "are you still there?");
  await waitFor("the bot answering the handed-back chat", 30_000, async () => (await outbound(server, operated)).length === 2);
});

test("a worker apart from the API (TEXTWIRE_URL) drafts in a supervised chat, skips a human one and a STOP, and answers the rest", async () => {
  const api = await startServer({ mode: "api", env: { OPENAI_API_KEY: "sk-local", OPENAI_BASE_URL: model.baseUrl } });
  cleanup.push(() => api.kill());
  const local = await testDatabase();
  cleanup.push(() => local.cleanup());
  const dir = join(local.dir, "workflows");
  mkdirSync(dir);
  writeFileSync(
    join(dir, "naive.ts"),
    `export default {
  name: "naive",
  schedule: "* * * * * *",
  async run(ctx) {
    const outcomes = (await ctx.state.get("outcomes")) ?? [];
    for (const msg of await ctx.poll()) {
      const sent = await ctx.reply(msg, "auto: " + msg.message);
      outcomes.push([msg.message, "skipped" in sent ? sent.skipped : sent.drafted ? "drafted" : "sent"]);
    }
    await ctx.state.set("outcomes", outcomes);
  },
};
`,
  );
  const [supervised, human, stopping, plain] = [newPhone(), newPhone(), newPhone(), newPhone()];
  for (const phone of [supervised, human]) await inbound(api, phone, "first");
  await call(api, "PATCH", `/api/chats/${dm(supervised)}`, { body: { mode: "supervised" } });
  await call(api, "PATCH", `/api/chats/${dm(human)}`, { body: { mode: "human" } });
  const worker = await spawnServer({ mode: "worker", db: local, env: { TEXTWIRE_URL: api.url, TEXTWIRE_API_KEY: api.apiKey, WORKFLOWS_DIR: dir } });
  cleanup.push(() => worker.kill());
  await waitFor("the worker to schedule the workflow", 15_000, () => worker.stdout.includes("workflow naive scheduled"), () => worker.stdout + worker.stderr);
  await inbound(api, stopping, "hello");
  await waitFor("the first contact answered", 20_000, async () => (await outbound(api, stopping)).length === 1, () => worker.stdout + worker.stderr);
  await inbound(api, stopping, "STOP");
  await inbound(api, supervised, "question");
  await inbound(api, human, "for the person");
  await inbound(api, plain, "hi");
  await waitFor("the plain contact answered", 20_000, async () => (await outbound(api, plain)).length === 1, () => worker.stdout + worker.stderr);
  await Bun.sleep(2_500);
  const [state] = await local.query<{ value: string }>("SELECT value FROM workflow_state WHERE workflow = 'naive' AND key = 'outcomes'");
  // The human chat's messages are passed over by poll; the STOPs are skipped; the supervised chat drafts.
  expect(JSON.parse(state!.value)).toEqual([
    ["hello", "sent"],
    ["STOP", "opted_out"],
    ["question", "drafted"],
    ["hi", "sent"],
  ]);
  expect((await outbound(api, supervised)).map((m) => m.status)).toEqual(["draft"]);
  expect(await outbound(api, human)).toEqual([]);
  const runs = await local.query<{ status: string }>("SELECT status FROM workflow_runs");
  expect(runs.filter((r) => r.status !== "ok")).toEqual([]);
  expect(await worker.stop()).toBe(0);
});
