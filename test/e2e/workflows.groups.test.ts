/**
 * Workflows in group chats end to end (docs/workflows.md "Group chats"): real servers on
 * temporary databases, group messages through the loopback webhook (`chat: { id, name,
 * participants }`), the generator played by a fake OpenAI-compatible server on 127.0.0.1.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { startFakeOpenAI } from "../support/fake-openai";
import { call, type Chat, history, type HistoryResult, inbound, type MessageRecord, newPhone, type SendResult } from "./api";
import { ROOT, spawnServer, startServer, testDatabase, waitFor, type Server, type Spawned } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(90_000);

const WORKFLOW_MODULE = resolve(ROOT, "src", "workflow.ts");
const SHIPPED_WORKFLOWS = resolve(ROOT, "workflows");

const cleanup: (() => unknown)[] = [];
const model = startFakeOpenAI();
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
  await model.stop();
}, 120_000);

type Group = { id: string; name: string; participants: string[] };
/** A record as chats show it: ours in a group has no phone. */
type ChatMessage = Omit<MessageRecord, "phone"> & { phone: string | null; chat_id: string };

/** A text from `phone` in the loopback group `chat`. */
async function groupText(server: Server, chat: Group, phone: string, message: string): Promise<string> {
  const reply = await call<SendResult>(server, "POST", "/webhooks/loopback", { body: { phone, message, chat } });
  if (reply.status !== 200) throw new Error(`group text: ${reply.status} ${reply.text}`);
  return reply.body.message_id;
}

/** The group's id here, and its messages, newest first. */
async function groupMessages(server: Server, name: string): Promise<{ id: string; messages: ChatMessage[] }> {
  const chats = await call<{ chats: Chat[] }>(server, "GET", "/api/chats?kind=group");
  const chat = chats.body.chats.find((c) => c.name === name);
  if (!chat) return { id: "", messages: [] };
  const page = await call<HistoryResult>(server, "GET", `/api/chats/${chat.id}/messages?limit=100`);
  return { id: chat.id, messages: page.body.messages as ChatMessage[] };
}

/** A workflow file in a new folder: it answers what it polls, in the message's chat, saying how it saw it. */
function replierDir(dir: string, groups: string): string {
  const wfDir = join(dir, "workflows");
  mkdirSync(wfDir);
  writeFileSync(
    join(wfDir, "replier.ts"),
    `import { defineWorkflow, isOptedOut } from ${JSON.stringify(WORKFLOW_MODULE)};
export default defineWorkflow({
  name: "replier",
  schedule: "* * * * * *",
  groups: ${JSON.stringify(groups)},
  async run(ctx) {
    for (const msg of await ctx.poll()) {
      try {
        await ctx.reply(msg, \`seen \${msg.group ? "group" : "direct"} \${msg.mentioned ? "mention" : "text"}: \${msg.message}\`);
      } catch (err) {
        // An opted-out contact, or a group muted by a STOP: not answered, the others are.
        if (!isOptedOut(err)) throw err;
      }
    }
  },
});
`,
  );
  return wfDir;
}

const outbound = <T extends { direction: string }>(messages: T[]) => messages.filter((m) => m.direction === "outbound");

describe('a workflow with groups "mentions"', () => {
  test(
    "answers in the group only when named (MENTION_PATTERNS), into the group's chat; direct messages as before; a group muted by STOP is not answered",
    async () => {
      const db = await testDatabase();
      cleanup.push(() => db.cleanup());
      const wfDir = replierDir(db.dir, "mentions");
      const server = await startServer({ db, env: { WORKFLOWS_DIR: wfDir, MENTION_PATTERNS: "textwire, @bot" } });
      cleanup.push(() => server.kill());
      await waitFor("the workflow to be scheduled", 10_000, () => server.stdout.includes("workflow replier scheduled"), () => server.stdout);

      const [ann, bob, carol] = [newPhone(), newPhone(), newPhone()];
      const family: Group = { id: `chat-${crypto.randomUUID()}`, name: "Family", participants: [ann, bob] };
      await groupText(server, family, ann, "who is cooking tonight?");
      const named = await groupText(server, family, bob, "Textwire, what time is dinner?");
      await groupText(server, family, ann, "textwired is not a name");
      await groupText(server, family, ann, "@bot and dessert?");
      await inbound(server, carol, "a direct hello");

      const answered = async () => {
        const { messages } = await groupMessages(server, "Family");
        return outbound(messages).length >= 2 && outbound((await history(server, carol)).messages).length >= 1 ? messages : undefined;
      };
      const messages = await waitFor("the replies", 20_000, answered, () => server.stdout.slice(-4000));
      await Bun.sleep(2500); // a few more ticks: a reply to a message that does not name us would show now

      const group = await groupMessages(server, "Family");
      expect(outbound(group.messages).map((m) => [m.message, m.phone, m.chat_id, m.status]).reverse()).toEqual([
        ["seen group mention: Textwire, what time is dinner?", null, group.id, "delivered"],
        ["seen group mention: @bot and dessert?", null, group.id, "delivered"],
      ]);
      expect(outbound(messages).at(-1)!.reply_to).toBe(named);
      // The direct message: to its contact, as ever; nothing of the group in either person's history.
      expect(outbound((await history(server, carol)).messages).map((m) => [m.message, m.phone, (m as ChatMessage).chat_id])).toEqual([
        ["seen direct text: a direct hello", carol, `dm_${carol.slice(1)}`],
      ]);
      for (const phone of [ann, bob]) expect((await history(server, phone)).messages).toEqual([]);

      // A participant's STOP mutes the group for automated sends: named again, no answer.
      await groupText(server, family, ann, "STOP");
      await groupText(server, family, bob, "textwire, still there?");
      await inbound(server, carol, "and after?");
      await waitFor("the direct reply after the STOP", 20_000, async () => outbound((await history(server, carol)).messages).length === 2, () => server.stdout.slice(-4000));
      await Bun.sleep(2500);
      expect(outbound((await groupMessages(server, "Family")).messages)).toHaveLength(2);
      // The API still sends into it.
      const api = await call<SendResult>(server, "POST", "/api/send", { body: { chat_id: group.id, message: "from a person" } });
      expect(api.status).toBe(200);
    },
  );
});

describe("a remote worker with groups \"all\"", () => {
  test(
    "polls the group messages through the API (chats=all) and answers each in its group",
    async () => {
      const api: Server = await startServer({ mode: "api" });
      cleanup.push(() => api.kill());
      const local = await testDatabase();
      cleanup.push(() => local.cleanup());
      const wfDir = replierDir(local.dir, "all");
      const worker: Spawned = await spawnServer({ mode: "worker", db: local, env: { TEXTWIRE_URL: api.url, TEXTWIRE_API_KEY: api.apiKey, WORKFLOWS_DIR: wfDir } });
      cleanup.push(() => worker.kill());
      await waitFor("the worker to schedule the workflow", 15_000, () => worker.stdout.includes("workflow replier scheduled"), () => worker.stdout + worker.stderr);

      const [ann, bob] = [newPhone(), newPhone()];
      const team: Group = { id: `chat-${crypto.randomUUID()}`, name: "Team", participants: [ann, bob] };
      await groupText(api, team, ann, "standup at 10");
      await groupText(api, team, bob, "textwire, book a room");
      const replied = async () => {
        const { messages } = await groupMessages(api, "Team");
        return outbound(messages).length >= 2 ? messages : undefined;
      };
      await waitFor("a reply to both group messages", 20_000, replied, () => worker.stdout + worker.stderr);
      await Bun.sleep(2500);
      const group = await groupMessages(api, "Team");
      expect(outbound(group.messages).map((m) => [m.message, m.chat_id]).reverse()).toEqual([
        ["seen group text: standup at 10", group.id],
        ["seen group mention: textwire, book a room", group.id],
      ]);

      // bob's STOP mutes the group: the worker learns it from the chat record (muted) and
      // answers neither it nor what follows. ann's direct text after them shows they were handled.
      await groupText(api, team, bob, "STOP");
      await groupText(api, team, ann, "textwire, still there?");
      await inbound(api, ann, "direct marker");
      await waitFor("the reply to the direct marker", 20_000, async () => (await history(api, ann)).messages.some((m) => m.message === "seen direct text: direct marker") || undefined, () => worker.stdout + worker.stderr);
      expect(outbound((await groupMessages(api, "Team")).messages)).toHaveLength(2);
    },
  );
});

describe("the shipped autoresponder in a group", () => {
  test(
    "answers only when named, with the group's recent messages (senders named) as context",
    async () => {
      const db = await testDatabase();
      cleanup.push(() => db.cleanup());
      model.reply({ kind: "text", text: "Dinner is at 8." });
      const server = await startServer({ db, env: { WORKFLOWS_DIR: SHIPPED_WORKFLOWS, OPENAI_API_KEY: "any", OPENAI_BASE_URL: model.baseUrl } });
      cleanup.push(() => server.kill());
      await waitFor("the autoresponder to be scheduled", 10_000, () => server.stdout.includes("workflow autoresponder scheduled"), () => server.stdout);

      const [ann, bob] = [newPhone(), newPhone()];
      const family: Group = { id: `chat-${crypto.randomUUID()}`, name: "Dinner", participants: [ann, bob] };
      await groupText(server, family, ann, "who is cooking?");
      // Two schedule periods and the quiet time: a reply to a message that does not name us would show now.
      await Bun.sleep(11_000);
      expect(outbound((await groupMessages(server, "Dinner")).messages)).toEqual([]);
      expect(model.requests).toHaveLength(0);

      const named = await groupText(server, family, bob, "Textwire, when is dinner?");
      const reply = await waitFor(
        "the autoresponder's reply in the group",
        25_000,
        // Stored queued before it is sent: read once the network's answer is in.
        async () => outbound((await groupMessages(server, "Dinner")).messages).find((m) => m.status !== "queued"),
        () => server.stdout.slice(-4000),
      );
      expect(reply).toMatchObject({ message: "Dinner is at 8.", phone: null, reply_to: named, status: "delivered" });
      expect(model.requests).toHaveLength(1);
      const turns = model.requests[0]!.messages.filter((m) => m.role === "user").map((m) => m.content);
      expect(turns).toEqual([`${ann}: who is cooking?`, `${bob}: Textwire, when is dinner?`]);
    },
  );
});
