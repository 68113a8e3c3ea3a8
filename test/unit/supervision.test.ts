// Supervised replies and handoffs (docs/supervision.md) on each database: chat modes and their
// events, drafts approved or rejected once, a person's send and a contact's keyword handing a chat
// over and its return, and the workflow rules (poll passes human chats; drafted or skipped, never a failed run).
import { describe, expect, test } from "bun:test";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { AppError } from "../../src/errors";
import { approveDraft, listDrafts, rejectDraft } from "../../src/messages/drafts";
import { returnExpiredHandoffs, setChatMode } from "../../src/messages/modes";
import { receiveLoopback } from "../../src/messages/network-events";
import { sendMessage } from "../../src/messages/service";
import { generateReply } from "../../src/generator/service";
import type { OutboundMessage } from "../../src/network/driver";
import { createLocalBackend } from "../../src/workflows/backend";
import { defineWorkflow, type SendOutcome, type Workflow, type WorkflowContext } from "../../src/workflows/define";
import { runWorkflow, type RunnerDeps } from "../../src/workflows/runner";
import { ensureWorkflow } from "../../src/workflows/store";
import { startFakeOpenAI } from "../support/fake-openai";
import { dialects, quietLog, rejectionOf, storages, type TestDialect } from "./helpers";

const ANN = "+14155550123";
const BOB = "+14155550124";
const CAROL = "+14155550125";
const dm = (phone: string) => `dm_${phone.slice(1)}`;
const FAMILY = { id: "family-chat", name: "Family", participants: [ANN, BOB] };
const OPERATOR = { id: "key_operator", scopes: ["*"] as const, lines: null, reach: "any" as const, expiresAt: null };

function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async (env: Record<string, string> = {}) => {
    const storage = await fresh();
    const config = loadConfig({ DATABASE_URL: ":memory:", ...env });
    const app = await createApp(config, storage, quietLog);
    const sent: OutboundMessage[] = [];
    const line = app.lines.default();
    const send = line.driver.send.bind(line.driver);
    line.driver = { ...line.driver, send: async (m) => (sent.push(m), send(m)) };
    await ensureWorkflow(storage, "helper");
    const deps: RunnerDeps = { backend: createLocalBackend(app), storage, log: app.log, maxMessageLength: 10_000, mentionPatterns: config.MENTION_PATTERNS, owner: "test" };
    const texted = async (phone: string, message: string, chat?: typeof FAMILY) =>
      ((await receiveLoopback(app, { phone, message, ...(chat ? { chat } : {}) })) as { message_id: string }).message_id;
    /** One run of the workflow "helper": what its body gave back and the run's result. */
    const run = async <T>(body: (ctx: WorkflowContext) => Promise<T>, extra: Partial<Workflow> = {}) => {
      let out: T | undefined;
      const result = await runWorkflow(deps, defineWorkflow({ name: "helper", schedule: "* * * * *", ...extra, run: async (ctx) => void (out = await body(ctx)) }), { trigger: "manual" });
      return { out: out as T, result };
    };
    /** Every reply to what poll gives, one per message: the outcomes. */
    const replyAll = (extra: Partial<Workflow> = {}) =>
      run(async (ctx) => {
        const outcomes: [string, SendOutcome][] = [];
        for (const m of await ctx.poll()) outcomes.push([m.message, await ctx.reply(m, `re: ${m.message}`)]);
        return outcomes;
      }, extra);
    const events = async (type: string) =>
      (await dialect.rows(storage, `SELECT type, message_id, data FROM events WHERE type = '${type}' ORDER BY timestamp`)).map((r) => ({
        messageId: r.message_id,
        data: typeof r.data === "string" ? JSON.parse(r.data) : r.data,
      }));
    return { app, storage, sent, texted, run, replyAll, events };
  };
}

describe.each(dialects)("on $name", (dialect) => {
  const setup = setups(dialect);

  test("chats are auto by default, DEFAULT_CHAT_MODE sets every chat not set by hand, and each change is one chat.mode_changed", async () => {
    const { app, storage, texted, events } = await setup({ DEFAULT_CHAT_MODE: "supervised" });
    await texted(ANN, "hi");
    expect((await storage.chats.get(dm(ANN)))?.mode).toBe("supervised");
    // A direct chat not made yet has the default too.
    expect(await storage.chats.modeOf(dm(CAROL))).toBe("supervised");
    const auto = await setChatMode(app, dm(ANN), "auto", "key_1");
    expect(auto).toMatchObject({ mode: "auto", previousMode: null, humanUntil: null });
    await setChatMode(app, dm(ANN), "auto", "key_1");
    const human = await setChatMode(app, dm(ANN), "human", "key_2");
    expect(human).toMatchObject({ mode: "human", previousMode: "auto" });
    expect(human.humanUntil).toBeGreaterThan(Date.now() + 59 * 60_000);
    expect((await events("chat.mode_changed")).map((e) => [e.data.from, e.data.to, e.data.by, e.data.chat.mode])).toEqual([
      ["supervised", "auto", "key_1", "auto"],
      ["auto", "human", "key_2", "human"],
    ]);
    expect(await rejectionOf(setChatMode(app, "dm_19995550000", "auto", null))).toMatchObject({ code: "NOT_FOUND" });
  });

  test("a workflow's reply into a supervised chat is a draft: nothing sent, the same draft on a retry, sent once when approved (edited)", async () => {
    const { app, storage, sent, texted, run, events } = await setup();
    await texted(ANN, "where is my order?");
    await setChatMode(app, dm(ANN), "supervised", null);
    let failOnce = true;
    const body = async (ctx: WorkflowContext) => {
      const outcomes: SendOutcome[] = [];
      for (const m of await ctx.poll()) outcomes.push(await ctx.reply(m, "It ships today"));
      if (failOnce) {
        failOnce = false;
        throw new Error("crashed after drafting");
      }
      return outcomes;
    };
    const first = await run(body);
    expect(first.result.status).toBe("error");
    const retried = await run(body);
    expect(retried.result.status).toBe("ok");
    const [draft] = retried.out;
    expect(draft).toMatchObject({ drafted: true, status: "draft", replayed: true });
    const id = (draft as { message_id: string }).message_id;
    expect(sent).toEqual([]);
    expect((await listDrafts(app, { limit: 10, offset: 0 })).drafts.map((d) => [d.id, d.message, d.status])).toEqual([[id, "It ships today", "draft"]]);
    expect((await events("message.drafted")).map((e) => [e.messageId, e.data.by])).toEqual([[id, null]]);
    // History shows it; poll never does (it is ours).
    expect((await storage.messages.history(ANN, 10, 0)).rows.map((r) => r.status)).toEqual(["draft", "received"]);

    const approved = await approveDraft({ ...app, key: OPERATOR }, id, "It ships today, by 5pm", OPERATOR.id);
    expect(approved).toMatchObject({ id, message: "It ships today, by 5pm", status: "delivered" });
    const again = await Promise.all([rejectionOf(approveDraft(app, id, undefined, OPERATOR.id)), rejectionOf(rejectDraft(app, id, OPERATOR.id))]);
    expect(again.map((e) => [(e as AppError).code, (e as AppError).message])).toEqual([
      ["CONFLICT", `message ${id} is delivered; only a draft can be approved`],
      ["CONFLICT", `message ${id} is delivered; only a draft can be rejected`],
    ]);
    expect(sent.map((m) => [m.id, m.text])).toEqual([[id, "It ships today, by 5pm"]]);
    expect((await events("message.approved")).map((e) => [e.messageId, e.data.by])).toEqual([[id, OPERATOR.id]]);
    expect((await listDrafts(app, { limit: 10, offset: 0 })).total).toBe(0);
    // The reply's key still names the one message: replying again sends nothing.
    const inbound = (await storage.messages.history(ANN, 10, 0)).rows.find((r) => r.direction === "inbound")!;
    const later = await run((ctx) => ctx.reply({ id: inbound.id, phone: ANN }, "another text"));
    expect(later.out).toMatchObject({ message_id: id, replayed: true });
    expect(sent).toHaveLength(1);
  });

  test("two approvals at once send the draft exactly once", async () => {
    const { app, sent, texted, replyAll } = await setup({ DEFAULT_CHAT_MODE: "supervised" });
    await texted(ANN, "hello");
    const { out } = await replyAll();
    const id = (out[0]![1] as { message_id: string }).message_id;
    const results = await Promise.allSettled([approveDraft(app, id, undefined, "a"), approveDraft(app, id, undefined, "b"), approveDraft(app, id, undefined, "c")]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(results.filter((r) => r.status === "rejected").map((r) => ((r as PromiseRejectedResult).reason as AppError).code)).toEqual(["CONFLICT", "CONFLICT"]);
    expect(sent.map((m) => m.id)).toEqual([id]);
  });

  test("a rejected draft is never sent", async () => {
    const { app, storage, sent, texted, replyAll, events } = await setup({ DEFAULT_CHAT_MODE: "supervised" });
    await texted(ANN, "hello");
    const { out } = await replyAll();
    const id = (out[0]![1] as { message_id: string }).message_id;
    expect(await rejectDraft(app, id, "key_x")).toMatchObject({ id, status: "rejected" });
    expect(await rejectionOf(approveDraft(app, id, undefined, "key_x"))).toMatchObject({ code: "CONFLICT" });
    expect((await storage.messages.get(id))?.status).toBe("rejected");
    expect(sent).toEqual([]);
    expect((await events("message.rejected")).map((e) => e.data.by)).toEqual(["key_x"]);
    expect(await rejectionOf(rejectDraft(app, "no-such-id", null))).toMatchObject({ code: "NOT_FOUND" });
  });

  test("a person's send with handoff makes the chat human: the workflow passes its messages and is skipped there, answers the others, and it returns after HANDOFF_MINUTES", async () => {
    const { app, storage, sent, texted, replyAll, events } = await setup({ HANDOFF_MINUTES: "0.002" });
    await texted(ANN, "first");
    await texted(BOB, "first");
    await replyAll();
    sent.length = 0;
    await sendMessage({ ...app, key: OPERATOR }, { phone: ANN, message: "Hi Ann, this is Sam", handoff: true });
    expect(await storage.chats.modeOf(dm(ANN))).toBe("human");
    await texted(ANN, "thanks Sam");
    await texted(BOB, "still there?");
    const { out, result } = await replyAll();
    expect(result.status).toBe("ok");
    // Ann's message is passed over (the cursor moves past it); Bob is answered.
    expect(out.map(([m]) => m)).toEqual(["still there?"]);
    expect(sent.map((m) => [m.phone, m.text])).toEqual([
      [ANN, "Hi Ann, this is Sam"],
      [BOB, "re: still there?"],
    ]);
    // A send into the human chat is skipped, not a failed run.
    const direct = await createLocalBackend(app).send({ phone: ANN, message: "bot" });
    expect(direct).toEqual({ skipped: "human" });
    expect((await events("chat.mode_changed")).map((e) => [e.data.from, e.data.to, e.data.by])).toEqual([["auto", "human", OPERATOR.id]]);
    // Each person's send restarts the time; then the sweep hands it back (by null).
    await Bun.sleep(150);
    expect(await returnExpiredHandoffs(storage)).toBe(1);
    expect(await returnExpiredHandoffs(storage)).toBe(0);
    expect(await storage.chats.modeOf(dm(ANN))).toBe("auto");
    expect((await events("chat.mode_changed")).map((e) => [e.data.from, e.data.to, e.data.by])).toEqual([
      ["auto", "human", OPERATOR.id],
      ["human", "auto", null],
    ]);
  });

  test("a person's send into a human chat restarts its time; set back by hand it returns at once", async () => {
    const { app, storage, texted } = await setup({ HANDOFF_MINUTES: "0.01" });
    await texted(ANN, "hi");
    await setChatMode(app, dm(ANN), "supervised", null);
    const human = await setChatMode(app, dm(ANN), "human", "k");
    await Bun.sleep(30);
    await sendMessage({ ...app, key: OPERATOR }, { phone: ANN, message: "still on it" });
    const after = (await storage.chats.get(dm(ANN)))!;
    expect(after.humanUntil!).toBeGreaterThan(human.humanUntil!);
    expect(after.previousMode).toBe("supervised");
    expect(await setChatMode(app, dm(ANN), "supervised", "k")).toMatchObject({ mode: "supervised", humanUntil: null, previousMode: null });
  });

  test('"human" from the contact hands the chat over, with chat.handoff_requested', async () => {
    const { storage, texted, replyAll, events, sent } = await setup();
    const asked = await texted(ANN, " Human! ");
    await texted(BOB, "human please");
    expect(await storage.chats.modeOf(dm(ANN))).toBe("human");
    expect(await storage.chats.modeOf(dm(BOB))).toBe("auto");
    const requested = await events("chat.handoff_requested");
    expect(requested.map((e) => [e.data.chat.id, e.data.chat.mode, e.data.message_id, e.data.by])).toEqual([[dm(ANN), "human", asked, null]]);
    expect((await events("chat.mode_changed")).map((e) => [e.data.from, e.data.to, e.data.by])).toEqual([["auto", "human", null]]);
    const { out } = await replyAll();
    expect(out.map(([m]) => m)).toEqual(["human please"]);
    expect(sent.map((m) => m.phone)).toEqual([BOB]);
  });

  test("a STOP from one contact or in one group leaves the workflow answering everyone else; its sends there are skipped, the run ok", async () => {
    const { storage, sent, texted, replyAll } = await setup();
    await texted(ANN, "textwire, plans?", FAMILY);
    await texted(BOB, "STOP", FAMILY);
    await texted(CAROL, "hi");
    await texted(ANN, "hello");
    // CAROL opts out after writing: her reply is skipped, the run goes on.
    await texted(CAROL, "STOP");
    const { out, result } = await replyAll({ groups: "all" });
    expect(result.status).toBe("ok");
    // A naive workflow answers everything, STOPs too: each refused send is a skip, never a failure.
    expect(out.map(([m, o]) => [m, "skipped" in o ? o.skipped : "sent"])).toEqual([
      ["textwire, plans?", "muted"],
      ["STOP", "muted"],
      ["hi", "opted_out"],
      ["hello", "sent"],
      ["STOP", "opted_out"],
    ]);
    expect(sent.map((m) => [m.phone, m.text])).toEqual([[ANN, "re: hello"]]);
    expect((await storage.messages.history(CAROL, 10, 0)).rows.every((r) => r.direction === "inbound")).toBe(true);
  });

  test("generate with auto_send: a draft in a supervised chat (sent false), 409 naming the mode in a human one; a drafting key always drafts", async () => {
    const openai = startFakeOpenAI({ kind: "text", text: "Happy to help" });
    try {
      const { app, storage, texted, sent } = await setup({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: openai.baseUrl });
      await texted(ANN, "hi");
      await texted(BOB, "hi");
      await setChatMode(app, dm(ANN), "supervised", null);
      const request = (phone: string) => ({ phone, context: [{ role: "user" as const, content: "hi" }], autoSend: true });
      const drafted = await generateReply({ ...app, key: OPERATOR }, request(ANN));
      expect(drafted).toMatchObject({ sent: false, generated_message: "Happy to help" });
      expect((await storage.messages.get(drafted.message_id))?.status).toBe("draft");
      await setChatMode(app, dm(ANN), "human", null);
      const refused = (await rejectionOf(generateReply({ ...app, key: OPERATOR }, request(ANN)))) as AppError;
      expect([refused.code, refused.message]).toEqual(["CONFLICT", "phone: the chat's mode is human (a person replied): automated sends wait until it is handed back (PATCH /api/chats/{id} { mode })"]);
      const drafter = { ...OPERATOR, id: "key_agent", scopes: ["drafts:write", "messages:read"] as never };
      const byAgent = await sendMessage({ ...app, key: drafter }, { phone: BOB, message: "Can I help?" });
      expect(byAgent.status).toBe("draft");
      expect(openai.requests.length).toBe(1);
      expect(sent).toEqual([]);
    } finally {
      await openai.stop();
    }
  });
});
