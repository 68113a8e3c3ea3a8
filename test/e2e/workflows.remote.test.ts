import { envLineOf } from "../unit/helpers";
// A worker apart from the API (`bun run start worker` with TEXTWIRE_URL): it polls, reads
// history, generates and replies through the server's API; its bookkeeping stays local.
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../../src/app";
import { createClient } from "../../src/client";
import { loadConfig } from "../../src/config";
import { openStorage } from "../../src/db";
import { AppError } from "../../src/errors";
import { createLogger } from "../../src/log";
import { recordInbound } from "../../src/messages/service";
import { applyTyping } from "../../src/messages/typing";
import { createLocalBackend, type MessagingBackend } from "../../src/workflows/backend";
import { createRemoteBackend } from "../../src/workflows/remote-backend";
import { startFakeOpenAI } from "../support/fake-openai";
import { call, history, inbound, newPhone } from "./api";
import { spawnServer, startServer, testDatabase, waitFor, type Server, type Spawned } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const model = startFakeOpenAI({ kind: "text", text: "Answered from afar" });
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup) await c();
  await model.stop();
}, 30_000);

test(
  "a remote worker answers each inbound message once, through the API",
  async () => {
    const api: Server = await startServer({ mode: "api", env: { OPENAI_API_KEY: "sk-local", OPENAI_BASE_URL: model.baseUrl } });
    cleanup.push(() => api.kill());
    const local = await testDatabase();
    cleanup.push(() => local.cleanup());
    const wfDir = join(local.dir, "workflows");
    mkdirSync(wfDir);
    writeFileSync(
      join(wfDir, "remote.ts"),
      `export default {
  name: "remote-replier",
  schedule: "* * * * * *",
  requires: ["generator"],
  async run(ctx) {
    for (const msg of await ctx.poll()) {
      const { messages } = await ctx.history(msg.phone, { limit: 10 });
      const context = messages.reverse().map((m) => ({ role: m.direction === "inbound" ? "user" : "assistant", content: m.message }));
      const { text } = await ctx.generate({ phone: msg.phone, context });
      await ctx.reply(msg, text);
    }
  },
};
`,
    );
    const worker: Spawned = await spawnServer({
      mode: "worker",
      db: local,
      env: { TEXTWIRE_URL: api.url, TEXTWIRE_API_KEY: api.apiKey, WORKFLOWS_DIR: wfDir },
    });
    cleanup.push(() => worker.kill());
    await waitFor("the worker to schedule the workflow", 15_000, () => worker.stdout.includes("workflow remote-replier scheduled"), () => worker.stdout + worker.stderr);
    expect(worker.stdout).toContain(`worker runs against ${api.url}`);

    const phones = [newPhone(), newPhone()];
    for (const phone of phones) await inbound(api, phone, `Hello from ${phone}`);
    const replied = async () => {
      for (const phone of phones) {
        const page = await history(api, phone);
        if (!page.messages.some((m) => m.direction === "outbound")) return false;
      }
      return true;
    };
    await waitFor("a reply to every inbound message", 20_000, replied, () => worker.stdout);
    await Bun.sleep(2500); // a few more ticks: a second reply would show now

    for (const phone of phones) {
      const outbound = (await history(api, phone)).messages.filter((m) => m.direction === "outbound");
      expect(outbound.map((m) => [m.message, m.status])).toEqual([["Answered from afar", "delivered"]]);
    }
    // The model saw each contact's message, sent by the server's generator.
    for (const phone of phones) {
      expect(model.requests.some((r) => r.messages.some((m) => m.content === `Hello from ${phone}`))).toBe(true);
    }
    expect(await worker.stop()).toBe(0);
    // Messages live on the server; the worker keeps only its runs, cursor and leases.
    expect(await local.query("SELECT count(*) AS n FROM messages")).toEqual([{ n: 0 }]);
    const runs = await local.query<{ status: string; handled: number }>("SELECT status, handled FROM workflow_runs");
    expect(runs.filter((r) => r.status === "ok").reduce((n, r) => n + r.handled, 0)).toBe(phones.length);
    expect(runs.filter((r) => r.status !== "ok")).toEqual([]);
  },
  60_000,
);

/** A backend send's outcome that must have sent (a skip fails the test). */
function sentOf<T extends object>(outcome: T): Exclude<T, { skipped: unknown }> {
  if ("skipped" in outcome) throw new Error(`the send was skipped: ${String(outcome.skipped)}`);
  return outcome as Exclude<T, { skipped: unknown }>;
}

/**
 * One run of sends as a workflow makes them: a keyed send and its replay, a reply to an
 * inbound message and a second reply to the same message (already answered), a send
 * without a key, and a key reused for another text. Ids are compared within the run.
 */
async function sendScenario(backend: MessagingBackend, phone: string) {
  const first = await backend.send({ phone, message: "Your order shipped" }, { key: "workflow:parity:send:order-1", anyText: false });
  const replay = await backend.send({ phone, message: "Your order shipped" }, { key: "workflow:parity:send:order-1", anyText: false });
  const reply = await backend.send({ phone, message: "Thanks for writing!" }, { key: "workflow:parity:reply:inbound-1", anyText: true });
  const answered = await backend.send({ phone, message: "A different reply to the same message" }, { key: "workflow:parity:reply:inbound-1", anyText: true });
  const plain = await backend.send({ phone, message: "No key at all" });
  const reused = await backend.send({ phone, message: "Another text, same key" }, { key: "workflow:parity:send:order-1", anyText: false }).then(
    () => "sent",
    () => "refused",
  );
  type Sent = { record: { id: string; timestamp: string; status: string }; replayed: boolean };
  const shape = (outcome: Sent | { skipped: string }, ofOutcome?: Sent | { skipped: string }) => {
    const r = sentOf(outcome);
    const of = ofOutcome && sentOf(ofOutcome);
    return {
    replayed: r.replayed,
    status: r.record.status,
    id: of ? (r.record.id === of.record.id ? "same as first" : "another") : typeof r.record.id,
    timestamp: of ? (r.record.timestamp === of.record.timestamp ? "same as first" : "another") : typeof r.record.timestamp,
    };
  };
  return {
    first: shape(first),
    replay: shape(replay, first),
    reply: shape(reply, first),
    answered: shape(answered, reply),
    plain: shape(plain, first),
    reused,
  };
}

/** A server in api mode (the remote side) and an app on a database of its own (the local side), both cleaned up after the test. */
async function apiAndLocalApp() {
  const api: Server = await startServer({ mode: "api" });
  cleanup.push(() => api.kill());
  const local = await testDatabase();
  cleanup.push(() => local.cleanup());
  const storage = await openStorage(local.url);
  cleanup.push(() => storage.close());
  return { api, app: await createApp(loadConfig({ DATABASE_URL: local.url, NETWORK: "loopback" }), storage, createLogger("error")), storage };
}

test(
  "a workflow's send returns the same through a remote server as locally: replayed flag, status, id",
  async () => {
    const { api, app } = await apiAndLocalApp();

    const locally = await sendScenario(createLocalBackend(app), newPhone());
    const phone = newPhone();
    const remotely = await sendScenario(createRemoteBackend(createClient({ url: api.url, apiKey: api.apiKey })), phone);

    expect(remotely).toEqual(locally);
    expect(locally).toEqual({
      first: { replayed: false, status: "delivered", id: "string", timestamp: "string" },
      replay: { replayed: true, status: "delivered", id: "same as first", timestamp: "same as first" },
      reply: { replayed: false, status: "delivered", id: "another", timestamp: "another" },
      answered: { replayed: true, status: "delivered", id: "same as first", timestamp: "same as first" },
      plain: { replayed: false, status: "delivered", id: "another", timestamp: "another" },
      reused: "refused",
    });
    // On the server, each text went out once: the replays sent nothing.
    const sent = (await history(api, phone)).messages.map((m) => m.message).sort();
    expect(sent).toEqual(["No key at all", "Thanks for writing!", "Your order shipped"]);
  },
  60_000,
);

/**
 * The conversation calls a workflow makes, on one backend: the network, a reaction to our
 * message (and to one that does not exist), typing on and off, the contact's typing, and
 * marking read the contact's text (`contactActs` makes the contact text and type on that backend's side).
 */
async function conversationScenario(backend: MessagingBackend, phone: string, contactActs: () => Promise<unknown>, unread: () => Promise<number>) {
  const network = await backend.network();
  const sent = sentOf(await backend.send({ phone, message: "Your order shipped" }));
  const reacted = await backend.react(sent.record.id, "love");
  const unknown = await backend.react("no-such-message", "love").catch((err: unknown) => [err instanceof AppError, (err as AppError).code]);
  await backend.typing(phone, true);
  await backend.typing(phone, false);
  await contactActs();
  const typing = await backend.isTyping(phone);
  const before = await unread();
  await backend.markRead(phone);
  return { network, reactions: reacted.reactions.map((r) => [r.reaction, r.direction, r.phone]), unknown, typing, unread: [before, await unread()] };
}

test(
  "react, typing, isTyping, markRead and the network answer the same through a remote server as locally",
  async () => {
    const { api, app, storage } = await apiAndLocalApp();

    const here = newPhone();
    const locally = await conversationScenario(
      createLocalBackend(app),
      here,
      async () => {
        await recordInbound(storage, envLineOf("loopback"), { phone: here, message: "Thanks!" });
        await applyTyping(storage, { phone: here, typing: true });
      },
      () => storage.messages.unread(here),
    );
    const there = newPhone();
    const client = createClient({ url: api.url, apiKey: api.apiKey });
    const remotely = await conversationScenario(
      createRemoteBackend(client),
      there,
      async () => {
        await inbound(api, there, "Thanks!");
        expect((await call(api, "POST", "/webhooks/loopback", { body: { phone: there, typing: true } })).status).toBe(200);
      },
      async () => (await client.contacts.get.query({ phone: there })).contact.unread,
    );

    expect(remotely).toEqual(locally);
    expect(locally).toEqual({
      network: { name: "loopback", capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true } },
      reactions: [["love", "outbound", null]],
      unknown: [true, "NOT_FOUND"],
      typing: true,
      unread: [1, 0],
    });
  },
  60_000,
);
