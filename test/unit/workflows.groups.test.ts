// Workflows in group chats (docs/workflows.md "Group chats"): the `groups` option of poll,
// `mentioned` by MENTION_PATTERNS, ctx.reply into the message's chat, a muted group left
// alone, and the shipped autoresponder answering a group only when named. In process, on
// the loopback network, over real databases.
import { afterAll, describe, expect, test } from "bun:test";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import type { OutboundMessage } from "../../src/network/driver";
import { receiveLoopback } from "../../src/messages/network-events";
import { createLocalBackend } from "../../src/workflows/backend";
import { defineWorkflow, isOptedOut, workflowShape, type PolledMessage, type SentMessage, type Workflow, type WorkflowContext } from "../../src/workflows/define";
import { mentionMatcher } from "../../src/workflows/mentions";
import { runWorkflow, type RunnerDeps } from "../../src/workflows/runner";
import { ensureWorkflow } from "../../src/workflows/store";
import autoresponder from "../../workflows/autoresponder";
import { startFakeOpenAI } from "../support/fake-openai";
import { clockDialects, dialects, manualClock, quietLog, storages, type TestDialect } from "./helpers";

const ANN = "+14155550123";
const BOB = "+14155550124";
const CAROL = "+14155550125";
const FAMILY = { id: "family-chat", name: "Family", participants: [ANN, BOB] };

describe("mentionMatcher", () => {
  const mentions = mentionMatcher(["textwire", "@bot"]);

  test.each([
    ["Textwire, are you there?", true],
    ["ask TEXTWIRE", true],
    ["hey @bot!", true],
    ["(textwire)", true],
    ["textwired is not a name", false],
    ["mytextwire", false],
    ["robot", false],
    ["no name at all", false],
  ])("%p: %p", (text, expected) => {
    expect(mentions(text)).toBe(expected);
  });

  test("patterns are words, not regular expressions; none mentions nothing", () => {
    expect(mentionMatcher(["a.b"])("axb")).toBe(false);
    expect(mentionMatcher(["a.b"])("say a.b now")).toBe(true);
    expect(mentionMatcher([])("textwire")).toBe(false);
  });
});

test("`groups` must be off, mentions or all", () => {
  const shape = { name: "w", schedule: "* * * * *", run() {} };
  expect(workflowShape.safeParse({ ...shape, groups: "mentions" }).success).toBe(true);
  const bad = workflowShape.safeParse({ ...shape, groups: "some" });
  expect(bad.success).toBe(false);
  expect(bad.error?.issues[0]).toMatchObject({ path: ["groups"], message: 'must be one of "off", "mentions", "all"' });
});

/** An app on the loopback network that records what reaches it, and ways to be texted. */
function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async (opts: { openai?: string; clock?: ReturnType<typeof manualClock> } = {}) => {
    const clock = opts.clock;
    const storage = await fresh(clock ? { clock: () => clock.t * 1000 } : {});
    const config = loadConfig({ DATABASE_URL: ":memory:", MENTION_PATTERNS: "textwire,@bot", ...(opts.openai ? { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: opts.openai } : {}) });
    const app = await createApp(config, storage, quietLog);
    const sent: OutboundMessage[] = [];
    const line = app.lines.default();
    const send = line.driver.send.bind(line.driver);
    line.driver = { ...line.driver, send: async (m) => (sent.push(m), send(m)) };
    // Seen before any text: a new workflow's cursor starts at its first sight.
    await ensureWorkflow(storage, "group-flow");
    await ensureWorkflow(storage, "dry");
    const deps: RunnerDeps = { backend: createLocalBackend(app), storage, log: app.log, maxMessageLength: 10_000, mentionPatterns: config.MENTION_PATTERNS, owner: "test" };
    /** A text from `phone`, in `chat` when given (the loopback webhook's input). */
    const texted = async (phone: string, message: string, chat?: typeof FAMILY) => {
      const answer = (await receiveLoopback(app, { phone, message, ...(chat ? { chat } : {}) })) as { message_id: string };
      return answer.message_id;
    };
    /** One run of a workflow of these options: what its body gave back, and the run's result. */
    const once = async <T>(body: (ctx: WorkflowContext) => Promise<T>, extra: Partial<Workflow> = {}) => {
      let out: T | undefined;
      const result = await runWorkflow(deps, defineWorkflow({ name: "group-flow", schedule: "* * * * *", ...extra, run: async (ctx) => void (out = await body(ctx)) }), { trigger: "manual" });
      if (result.status !== "ok") throw new Error(`run ${result.status}: ${result.error}`);
      return { out: out as T, result };
    };
    const groupId = async () => (await storage.chats.list("group", 10, 0)).rows[0]!.id;
    return { app, storage, deps, sent, texted, once, groupId };
  };
}

const shown = (messages: PolledMessage[]) => messages.map((m) => [m.message, m.phone, m.group, m.mentioned]);

describe.each(dialects)("on $name", (dialect) => {
  const setup = setups(dialect);

  test('groups "off" (the default): poll returns direct messages only, as before', async () => {
    const { texted, once } = await setup();
    await texted(ANN, "hello textwire");
    await texted(BOB, "textwire, dinner?", FAMILY);
    await texted(CAROL, "just me");
    const { out, result } = await once((ctx) => ctx.poll());
    expect(shown(out)).toEqual([
      ["hello textwire", ANN, false, true],
      ["just me", CAROL, false, false],
    ]);
    expect(out.map((m) => m.chat_id)).toEqual([`dm_${ANN.slice(1)}`, `dm_${CAROL.slice(1)}`]);
    expect(result.handled).toBe(2);
  });

  test('groups "all": every group message too, in order under the one cursor, each with its chat and whether it mentions us', async () => {
    const { texted, once, groupId } = await setup();
    await texted(ANN, "hi");
    await texted(BOB, "what time?", FAMILY);
    await texted(ANN, "ask TEXTWIRE", FAMILY);
    await texted(ANN, "@bot please", FAMILY);
    const first = await once((ctx) => ctx.poll({ limit: 3 }), { groups: "all" });
    const group = await groupId();
    expect(shown(first.out)).toEqual([
      ["hi", ANN, false, false],
      ["what time?", BOB, true, false],
      ["ask TEXTWIRE", ANN, true, true],
    ]);
    expect(first.out.map((m) => m.chat_id)).toEqual([`dm_${ANN.slice(1)}`, group, group]);
    // The cursor moved past the three: the next run goes on after them.
    const next = await once((ctx) => ctx.poll(), { groups: "all" });
    expect(shown(next.out)).toEqual([["@bot please", ANN, true, true]]);
  });

  test('groups "mentions": direct messages and the group messages that name us; the others are passed, never seen again', async () => {
    const { texted, once } = await setup();
    await texted(BOB, "what time?", FAMILY);
    await texted(ANN, "plain direct text");
    await texted(ANN, "textwired is not us", FAMILY);
    await texted(BOB, "Textwire: 8 pm?", FAMILY);
    await texted(BOB, "ok", FAMILY);
    const { out, result } = await once((ctx) => ctx.poll(), { groups: "mentions" });
    expect(shown(out)).toEqual([
      ["plain direct text", ANN, false, false],
      ["Textwire: 8 pm?", BOB, true, true],
    ]);
    expect(result.handled).toBe(2);
    expect((await once((ctx) => ctx.poll(), { groups: "mentions" })).out).toEqual([]);
  });

  test("ctx.reply answers a group message in the group (one network send with the chat, at most once); a direct one goes to its contact as before", async () => {
    const { texted, once, sent, storage, groupId } = await setup();
    const asked = await texted(BOB, "textwire, table for 4?", FAMILY);
    await texted(CAROL, "and me?");
    const { out } = await once(async (ctx) => {
      const replies: SentMessage[] = [];
      for (const m of await ctx.poll()) replies.push((await ctx.reply(m, `re: ${m.message}`)) as SentMessage, (await ctx.reply(m, "a second text")) as SentMessage);
      return replies;
    }, { groups: "all" });
    const group = await groupId();
    expect(out.map((s) => [s.phone, s.chat_id, s.replayed])).toEqual([
      ["", group, false],
      ["", group, true],
      [CAROL, undefined, false],
      [CAROL, undefined, true],
    ]);
    // The second reply to each is the first, replayed: the same message.
    expect([out[1]!.id, out[3]!.id]).toEqual([out[0]!.id, out[2]!.id]);
    expect(sent.map((m) => [m.phone, m.chat, m.text])).toEqual([
      ["", FAMILY.id, "re: textwire, table for 4?"],
      [CAROL, undefined, "re: and me?"],
    ]);
    const [ours] = (await storage.messages.chatHistory(group, 1, 0)).rows;
    expect(ours).toMatchObject({ id: out[0]!.id, direction: "outbound", chatId: group, body: "re: textwire, table for 4?", status: "delivered", replyTo: asked });
  });

  test("a group muted by a participant's STOP gets no automated send (skipped: muted, nothing stored, the run goes on) until they send START there", async () => {
    const { texted, once, sent, storage, groupId } = await setup();
    await texted(BOB, "textwire?", FAMILY);
    await texted(ANN, "STOP", FAMILY);
    const group = await groupId();
    const { out, result } = await once(async (ctx) => {
      const [mention] = await ctx.poll();
      const muted = await ctx.muted(group);
      const refused = await ctx.reply(mention!, "hello");
      const sendRefused = await ctx.send({ chat_id: group, message: "news" });
      return { muted, refused, sendRefused, direct: await ctx.muted(`dm_${ANN.slice(1)}`) };
    }, { groups: "mentions" });
    expect(result.status).toBe("ok");
    expect(out.muted).toBe(true);
    expect(out.direct).toBe(false);
    expect(out.refused).toEqual({ skipped: "muted" });
    expect(out.sendRefused).toEqual({ skipped: "muted" });
    expect(sent).toEqual([]);
    expect((await storage.messages.chatHistory(group, 10, 0)).rows.filter((r) => r.direction === "outbound")).toEqual([]);

    await texted(ANN, "START", FAMILY);
    const after = await once((ctx) => ctx.send({ chat_id: group, message: "back" }));
    expect(after.out).toMatchObject({ chat_id: group, message: "back", replayed: false, drafted: false });
    expect(sent.map((m) => m.chat)).toEqual([FAMILY.id]);
  });

  test("a dry run's reply into a group says where it would go and sends nothing", async () => {
    const { texted, deps, sent, groupId } = await setup();
    await texted(BOB, "textwire?", FAMILY);
    const wf = defineWorkflow({ name: "dry", schedule: "* * * * *", groups: "mentions", async run(ctx) {
      for (const m of await ctx.poll()) await ctx.reply(m, "would answer");
    } });
    const result = await runWorkflow(deps, wf, { trigger: "manual", dryRun: true });
    expect(result.sends).toMatchObject([{ phone: "", chat_id: await groupId(), message: "would answer", dryRun: true }]);
    expect(sent).toEqual([]);
  });
});

describe.each(clockDialects)("the shipped autoresponder in a group on $name", (dialect) => {
  const setup = setups(dialect);
  const model = startFakeOpenAI();
  afterAll(() => model.stop());

  async function groupSetup() {
    const clock = manualClock(Date.now());
    const s = await setup({ openai: model.baseUrl, clock });
    await ensureWorkflow(s.storage, autoresponder.name);
    /** A text `ago` ms ago (quiet long enough by default). */
    const texted = async (phone: string, text: string, chat?: typeof FAMILY, ago = 10_000) => {
      clock.t = Date.now() - ago;
      const id = await s.texted(phone, text, chat);
      clock.t = Date.now();
      return id;
    };
    const run = () => runWorkflow(s.deps, autoresponder, { trigger: "manual" });
    return { ...s, texted, run };
  }

  test("answers in the group only when named, with the group's messages (senders named) as context; once a minute at most per group", async () => {
    const { texted, run, sent, storage, groupId } = await groupSetup();
    model.reply({ kind: "text", text: "Dinner is at 8." });
    const before = model.requests.length;
    await texted(ANN, "who is cooking?", FAMILY, 20_000);
    expect(await run()).toMatchObject({ status: "ok", handled: 0, sends: [] });
    expect(model.requests.length).toBe(before);

    const named = await texted(BOB, "Textwire, when is dinner?", FAMILY);
    expect(await run()).toMatchObject({ status: "ok", handled: 1, sends: [{ message: "Dinner is at 8.", phone: "", chat_id: await groupId() }] });
    expect(model.requests.length).toBe(before + 1);
    const turns = model.requests.at(-1)!.messages.filter((m) => m.role === "user").map((m) => m.content);
    expect(turns).toEqual([`${ANN}: who is cooking?`, `${BOB}: Textwire, when is dinner?`]);
    expect(sent.map((m) => [m.chat, m.text])).toEqual([[FAMILY.id, "Dinner is at 8."]]);
    const [reply] = (await storage.messages.chatHistory(await groupId(), 1, 0)).rows;
    expect(reply).toMatchObject({ direction: "outbound", replyTo: named, body: "Dinner is at 8." });

    // Named again at once: it waits for the group's interval, then answers the latest mention.
    await texted(ANN, "thanks textwire", FAMILY);
    expect(await run()).toMatchObject({ status: "ok", handled: 1, sends: [] });
    expect(model.requests.length).toBe(before + 1);
  });

  test("a group a participant muted with STOP is not answered, and nothing is generated for it", async () => {
    const { texted, run, sent } = await groupSetup();
    const before = model.requests.length;
    await texted(ANN, "STOP", FAMILY);
    await texted(BOB, "textwire, are you there?", FAMILY);
    expect(await run()).toMatchObject({ status: "ok", handled: 1, sends: [] });
    expect(model.requests.length).toBe(before);
    expect(sent).toEqual([]);
  });
});
