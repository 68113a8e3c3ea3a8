/**
 * The automation worker end to end (docs/workflows.md, README "Workflows: the automation worker"):
 * real servers (`bun run start`) and the real CLI (`bun run textwire workflows ...`) on
 * temporary databases, with workflow files written into a temporary WORKFLOWS_DIR and the
 * generator played by a fake OpenAI-compatible server on 127.0.0.1.
 *
 * Crashes and graceful shutdown are in workflows.crash.test.ts; several processes on one
 * database in workflows.lease.test.ts.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Cron } from "croner";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { startFakeOpenAI, type ChatRequest } from "../support/fake-openai";
import { call, history, inbound, micros, newPhone, type MessageRecord } from "./api";
import { ROOT, lines, runCli, startServer, testDatabase, type Server, type TestDatabase, waitFor } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const WORKFLOW_MODULE = resolve(ROOT, "src", "workflow.ts");
const SHIPPED_WORKFLOWS = resolve(ROOT, "workflows");

const servers: Server[] = [];
const dbs: TestDatabase[] = [];
const fakes: ReturnType<typeof startFakeOpenAI>[] = [];

afterAll(async () => {
  for (const s of servers) s.kill();
  for (const f of fakes) await f.stop();
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((d) => d.cleanup()));
}, 120_000);

/** A new test database and, in its folder, an empty workflows folder. */
async function workspace(): Promise<{ db: TestDatabase; wfDir: string }> {
  const db = await testDatabase();
  dbs.push(db);
  const wfDir = join(db.dir, "workflows");
  mkdirSync(wfDir);
  return { db, wfDir };
}

function fakeModel() {
  const fake = startFakeOpenAI();
  fakes.push(fake);
  return fake;
}

async function boot(db: TestDatabase, env: Record<string, string | undefined>): Promise<Server> {
  const server = await startServer({ db, env });
  servers.push(server);
  return server;
}

interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** The JSON lines a server wrote on stdout (anything else is left out). */
function logLines(stdout: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of lines(stdout)) {
    try {
      const parsed = JSON.parse(line) as unknown;
      if (parsed && typeof parsed === "object" && "msg" in parsed) out.push(parsed as LogLine);
    } catch {
      // Not a log line (e.g. the banner of a created key).
    }
  }
  return out;
}


const serverOutput = (server: Server) => () => `--- stdout ---\n${server.stdout.slice(-4000)}\n--- stderr ---\n${server.stderr.slice(-2000)}`;

/** The last user turn the fake model was shown. */
const lastUserTurn = (req: ChatRequest) => req.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";

async function fullHistory(server: Server, phone: string): Promise<MessageRecord[]> {
  return (await history(server, phone, "limit=100")).messages;
}

async function readRuns(db: TestDatabase, workflow: string) {
  const rows = await db.query<{ id: string; status: string; error: string | null; handled: number; startedAt: number; endedAt: number | null; dryRun: number | boolean; trigger: string }>(
    'SELECT id, status, error, handled, started_at AS "startedAt", ended_at AS "endedAt", dry_run AS "dryRun", trigger FROM workflow_runs WHERE workflow = ? ORDER BY started_at',
    workflow,
  );
  // SQLite keeps a boolean as 0 or 1.
  return rows.map((r) => ({ ...r, dryRun: Boolean(r.dryRun) }));
}

/** When our typing indicator to `phone` is on until (ms), or null when it is off: no API shows ours. */
async function ourTyping(db: TestDatabase, phone: string): Promise<unknown> {
  const [row] = await db.query<{ until: unknown }>('SELECT our_typing_until AS "until" FROM contacts WHERE phone = ?', phone);
  return row?.until ?? null;
}

/** GET /api/contacts/:phone's contact. */
async function contact(server: Server, phone: string): Promise<{ unread: number; typing: boolean }> {
  const reply = await call<{ contact: { unread: number; typing: boolean } }>(server, "GET", `/api/contacts/${encodeURIComponent(phone)}`);
  if (reply.status !== 200) throw new Error(`contact ${phone}: ${reply.status} ${reply.text}`);
  return reply.body.contact;
}

/** What the contact does besides texting, through the loopback webhook (docs/networks.md): its answer. */
async function contactDoes<T = unknown>(server: Server, phone: string, what: { typing: boolean } | { reaction: { message_id: string; reaction: string } }): Promise<T> {
  const reply = await call<T>(server, "POST", "/webhooks/loopback", { body: { phone, ...what } });
  if (reply.status !== 200) throw new Error(`${JSON.stringify(what)} from ${phone}: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function readState(db: TestDatabase, workflow: string, key: string): Promise<unknown> {
  const [row] = await db.query<{ value: string }>("SELECT value FROM workflow_state WHERE workflow = ? AND key = ?", workflow, key);
  return row ? JSON.parse(row.value) : undefined;
}

describe("a workflow that answers every inbound message with the generator", () => {
  test(
    "every inbound message gets exactly one reply, with the model's text, and the model saw it",
    async () => {
      const { db, wfDir } = await workspace();
      const fake = fakeModel();
      fake.reply((req) => ({ kind: "text", text: `model reply to: ${lastUserTurn(req)}` }));
      writeFileSync(
        join(wfDir, "echo-bot.ts"),
        `import { defineWorkflow } from ${JSON.stringify(WORKFLOW_MODULE)};
export default defineWorkflow({
  name: "echo-bot",
  schedule: "* * * * * *",
  requires: ["generator"],
  async run(ctx) {
    for (const msg of await ctx.poll()) {
      const { text } = await ctx.generate({ phone: msg.phone, context: [{ role: "user", content: msg.message }] });
      await ctx.reply(msg, text);
    }
  },
});
`,
      );
      const server = await boot(db, { WORKFLOWS_DIR: wfDir, OPENAI_API_KEY: "any", OPENAI_BASE_URL: fake.baseUrl });
      await waitFor("the workflow to be scheduled", 5000, () => logLines(server.stdout).some((l) => l.msg === "workflow echo-bot scheduled"), serverOutput(server));

      const phones = Array.from({ length: 5 }, () => newPhone());
      const sent: { phone: string; message: string }[] = [];
      await Promise.all(
        phones.flatMap((phone, p) =>
          [0, 1].map(async (i) => {
            const message = `hello ${i} from contact ${p} (${phone})`;
            await inbound(server, phone, message);
            sent.push({ phone, message });
          }),
        ),
      );
      expect(sent).toHaveLength(10);

      const answered = async () => {
        for (const phone of phones) {
          const msgs = await fullHistory(server, phone);
          const ins = msgs.filter((m) => m.direction === "inbound");
          const outs = msgs.filter((m) => m.direction === "outbound");
          if (ins.length < 2) return false;
          if (!ins.every((i) => outs.some((o) => o.message === `model reply to: ${i.message}`))) return false;
        }
        return true;
      };
      await waitFor("a reply to every inbound message", 20_000, answered, serverOutput(server));
      // Several more ticks: a duplicate reply would show up now.
      await Bun.sleep(3000);

      for (const phone of phones) {
        const msgs = await fullHistory(server, phone);
        const ins = msgs.filter((m) => m.direction === "inbound");
        const outs = msgs.filter((m) => m.direction === "outbound");
        expect(ins.map((m) => m.message).sort()).toEqual(sent.filter((s) => s.phone === phone).map((s) => s.message).sort());
        expect(outs).toHaveLength(ins.length);
        for (const i of ins) {
          const replies = outs.filter((o) => o.message === `model reply to: ${i.message}`);
          expect(replies).toHaveLength(1);
          expect(replies[0]!.status).toBe("delivered");
          expect(micros(replies[0]!.timestamp)).toBeGreaterThan(micros(i.timestamp));
        }
      }
      for (const { message } of sent) {
        expect(fake.requests.some((r) => r.messages.some((m) => m.role === "user" && m.content === message))).toBe(true);
      }
      // Each message was handled by exactly one successful run (the cursor moved past it).
      const runs = await readRuns(db, "echo-bot");
      expect(runs.filter((r) => r.status === "ok").reduce((n, r) => n + r.handled, 0)).toBe(10);
      expect(runs.filter((r) => r.status === "error" || r.status === "timeout")).toEqual([]);
    },
    45_000,
  );
});

describe("a run that throws after replying", () => {
  test(
    "is recorded as an error; the next run (after the backoff) sees the same messages and sends no second reply",
    async () => {
      const { db, wfDir } = await workspace();
      const go = join(db.dir, "go");
      writeFileSync(
        join(wfDir, "flaky.ts"),
        `import { existsSync } from "node:fs";
export default {
  name: "flaky",
  schedule: "* * * * * *",
  async run(ctx) {
    // Waits for the test to store every message, so that one run takes them all.
    if (!existsSync(${JSON.stringify(go)})) return;
    const msgs = await ctx.poll();
    if (msgs.length === 0) return;
    for (const msg of msgs) await ctx.reply(msg, "reply #" + ((await ctx.state.get("attempt")) ?? 1) + " to " + msg.message);
    if (!(await ctx.state.get("attempt"))) {
      await ctx.state.set("attempt", 2);
      throw new Error("flaky failure after replying");
    }
  },
};
`,
      );
      const server = await boot(db, { WORKFLOWS_DIR: wfDir });
      await waitFor("the workflow to be scheduled", 5000, () => server.stdout.includes("workflow flaky scheduled"), serverOutput(server));
      const phones = [newPhone(), newPhone(), newPhone()];
      const texts = phones.map((p) => `question from ${p}`);
      await Promise.all(phones.map((p, i) => inbound(server, p, texts[i]!)));
      writeFileSync(go, "go\n");

      // The failed run, then (5 s of backoff later) a successful one over the same messages.
      await waitFor(
        "a successful run after the failure",
        20_000,
        async () => {
          const runs = await readRuns(db, "flaky");
          return runs.some((r) => r.status === "error") && runs.some((r) => r.status === "ok" && r.handled > 0);
        },
        serverOutput(server),
      );
      await Bun.sleep(2000);

      const runs = (await readRuns(db, "flaky")).filter((r) => r.handled > 0);
      expect(runs.map((r) => [r.status, r.handled])).toEqual([
        ["error", 3],
        ["ok", 3],
      ]);
      expect(runs[0]!.error).toContain("flaky failure after replying");
      for (const [i, phone] of phones.entries()) {
        const outs = (await fullHistory(server, phone)).filter((m) => m.direction === "outbound");
        // Exactly one reply: the first run's; the retry's text differs but the reply is replayed.
        expect(outs.map((m) => [m.message, m.status])).toEqual([[`reply #1 to ${texts[i]}`, "delivered"]]);
      }
      expect(await db.query('SELECT failures, backoff_until AS "backoffUntil" FROM workflows WHERE name = \'flaky\'')).toEqual([{ failures: 0, backoffUntil: null }]);
    },
    45_000,
  );
});

describe("files that cannot be workflows", () => {
  test(
    "a broken file, a bad shape, no default export and a repeated name are each logged with path and reason; the good ones run",
    async () => {
      const { db, wfDir } = await workspace();
      const marks = join(db.dir, "marks.txt");
      const good = (name: string) => `import { appendFileSync } from "node:fs";
export default {
  name: ${JSON.stringify(name)},
  schedule: "* * * * * *",
  async run(ctx) {
    appendFileSync(${JSON.stringify(marks)}, ${JSON.stringify(name)} + "\\n");
    await ctx.state.set("ran", true);
  },
};
`;
      const files = {
        broken: join(wfDir, "broken.ts"),
        badShape: join(wfDir, "bad-shape.ts"),
        noDefault: join(wfDir, "no-default.ts"),
        duplicate: join(wfDir, "zz-duplicate.ts"),
        good: join(wfDir, "good.ts"),
        alsoGood: join(wfDir, "also-good.js"),
        testFile: join(wfDir, "ignored.test.ts"),
      };
      writeFileSync(files.broken, `export default { name: "broken", schedule: "* * * * * *", async run(ctx) { ctx.poll( };\n`);
      writeFileSync(files.badShape, `export default { name: "Bad_Name", schedule: "every minute", timeoutMs: -5, run: "nope" };\n`);
      writeFileSync(files.noDefault, `export const name = "no-default";\n`);
      writeFileSync(files.duplicate, good("good-one"));
      writeFileSync(files.good, good("good-one"));
      writeFileSync(files.alsoGood, good("also-good"));
      // Tests and other files are not loaded, so they are not reported either.
      writeFileSync(files.testFile, `this is not even { javascript\n`);
      writeFileSync(join(wfDir, "notes.txt"), `not a workflow\n`);

      const server = await boot(db, { WORKFLOWS_DIR: wfDir });
      await waitFor(
        "both good workflows to run",
        10_000,
        async () => {
          const text = await Bun.file(marks).text().catch(() => "");
          return text.includes("good-one\n") && text.includes("also-good\n");
        },
        serverOutput(server),
      );

      const log = logLines(server.stdout);
      const skipped = (path: string) => log.filter((l) => l.msg.includes("skipped") && (l.path === path || l.msg.includes(path)));
      for (const path of [files.broken, files.badShape, files.noDefault, files.duplicate]) {
        const found = skipped(path);
        if (found.length !== 1) throw new Error(`expected one "skipped" line for ${path}, got ${found.length}\n${server.stdout.slice(-4000)}`);
        expect(found[0]!.level).toBe("error");
        expect(found[0]!.msg).toContain(path);
      }
      const reason = (path: string) => skipped(path)[0]!.msg.slice(skipped(path)[0]!.msg.indexOf(path) + path.length);
      expect(reason(files.broken)).toMatch(/load/i);
      for (const field of ["name:", "schedule:", "timeoutMs:", "run:"]) expect(reason(files.badShape)).toContain(field);
      expect(reason(files.noDefault)).toMatch(/default export/i);
      expect(reason(files.duplicate)).toMatch(/duplicate/i);
      expect(reason(files.duplicate)).toContain(files.good);

      expect(server.stdout).not.toContain("ignored.test.ts");
      expect(server.stdout).not.toContain("notes.txt");
      const scheduled = log.filter((l) => /^workflow \S+ scheduled$/.test(l.msg)).map((l) => l.workflow);
      expect(scheduled.sort()).toEqual(["also-good", "good-one"]);
      // A run is recorded as ended just after its last line: wait for both records.
      const ranOk = async (workflow: string) => (await readRuns(db, workflow)).some((r) => r.status === "ok");
      await waitFor("a successful run of each good workflow", 10_000, async () => (await ranOk("good-one")) && (await ranOk("also-good")), serverOutput(server));
      expect(await readRuns(db, "broken")).toEqual([]);
    },
    30_000,
  );
});

describe("the workflows CLI", () => {
  test(
    "run --dry-run sends nothing and prints what it would send; a real run sends; a throwing workflow exits non-zero; list shows schedule, zone, next run and last result",
    async () => {
      const { db, wfDir } = await workspace();
      // Yearly schedules: only the CLI runs these, the server just registers them.
      writeFileSync(
        join(wfDir, "greeter.ts"),
        `export default {
  name: "greeter",
  schedule: "0 0 1 1 *",
  timezone: "Europe/Madrid",
  async run(ctx) {
    const msgs = await ctx.poll();
    for (const msg of msgs) await ctx.reply(msg, "greetings, " + msg.message);
    await ctx.state.set("greeted", ((await ctx.state.get("greeted")) ?? 0) + msgs.length);
  },
};
`,
      );
      writeFileSync(
        join(wfDir, "thrower.ts"),
        `export default {
  name: "thrower",
  schedule: "30 4 1 1 *",
  async run(ctx) {
    await ctx.poll();
    throw new Error("boom from the thrower workflow");
  },
};
`,
      );
      // Uses the generator without declaring it: without one, its run fails with a clear error.
      writeFileSync(
        join(wfDir, "undeclared.ts"),
        `export default {
  name: "undeclared",
  schedule: "0 12 1 1 *",
  async run(ctx) {
    for (const msg of await ctx.poll()) {
      const { text } = await ctx.generate({ phone: msg.phone, context: [{ role: "user", content: msg.message }] });
      await ctx.reply(msg, text);
    }
  },
};
`,
      );
      const server = await boot(db, { WORKFLOWS_DIR: wfDir, OPENAI_API_KEY: undefined });
      await waitFor("the workflows to be scheduled", 5000, () => logLines(server.stdout).filter((l) => /^workflow \S+ scheduled$/.test(l.msg)).length === 3, serverOutput(server));
      const cliEnv = { DATABASE_URL: db.url, WORKFLOWS_DIR: wfDir };

      const phones = [newPhone(), newPhone()];
      for (const phone of phones) await inbound(server, phone, `hi from ${phone}`);
      const before = await Promise.all(phones.map((p) => fullHistory(server, p)));

      // Dry run: prints what it would send, sends nothing, and leaves the cursor.
      const dry = await runCli(["workflows", "run", "greeter", "--dry-run"], cliEnv);
      if (dry.code !== 0) throw new Error(`dry run exited ${dry.code}\n${dry.stdout}\n${dry.stderr}`);
      for (const phone of phones) {
        expect(dry.stdout).toContain(phone);
        expect(dry.stdout).toContain(`greetings, hi from ${phone}`);
      }
      const dryResult = JSON.parse(dry.stdout) as { status: string; handled: number; sends: { phone: string; message: string; dryRun: boolean }[] };
      expect(dryResult.status).toBe("ok");
      expect(dryResult.handled).toBe(2);
      expect(dryResult.sends.map((s) => [s.phone, s.message, s.dryRun]).sort()).toEqual(phones.map((p) => [p, `greetings, hi from ${p}`, true]).sort());
      const afterDry = await Promise.all(phones.map((p) => fullHistory(server, p)));
      expect(afterDry).toEqual(before);
      expect(await readState(db, "greeter", "greeted")).toBeUndefined();

      // A real run sends those same replies (the dry run did not move the cursor).
      const real = await runCli(["workflows", "run", "greeter"], cliEnv);
      if (real.code !== 0) throw new Error(`run exited ${real.code}\n${real.stdout}\n${real.stderr}`);
      const realResult = JSON.parse(real.stdout) as { status: string; handled: number; sends: { dryRun: boolean; replayed: boolean }[] };
      expect(realResult.status).toBe("ok");
      expect(realResult.handled).toBe(2);
      expect(realResult.sends.map((s) => [s.dryRun, s.replayed])).toEqual([
        [false, false],
        [false, false],
      ]);
      for (const phone of phones) {
        const outs = (await fullHistory(server, phone)).filter((m) => m.direction === "outbound");
        expect(outs.map((m) => [m.message, m.status])).toEqual([[`greetings, hi from ${phone}`, "delivered"]]);
      }
      expect(await readState(db, "greeter", "greeted")).toBe(2);
      // Now the cursor is past them: another run handles nothing and sends nothing.
      const again = await runCli(["workflows", "run", "greeter"], cliEnv);
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ status: "ok", handled: 0, sends: [] });

      // A workflow that throws: non-zero exit, and the error is printed.
      const failed = await runCli(["workflows", "run", "thrower"], cliEnv);
      expect(failed.code).not.toBe(0);
      expect(failed.stdout + failed.stderr).toContain("boom from the thrower workflow");

      const undeclared = await runCli(["workflows", "run", "undeclared"], cliEnv);
      expect(undeclared.code).not.toBe(0);
      expect(JSON.parse(undeclared.stdout)).toMatchObject({ status: "error", handled: 2, sends: [] });
      expect(JSON.parse(undeclared.stdout).error).toContain("OPENAI_API_KEY");
      for (const phone of phones) expect((await fullHistory(server, phone)).filter((m) => m.direction === "outbound")).toHaveLength(1);

      const list = await runCli(["workflows", "list"], cliEnv);
      if (list.code !== 0) throw new Error(`list exited ${list.code}\n${list.stdout}\n${list.stderr}`);
      const rows = lines(list.stdout);
      const greeter = rows.find((r) => r.startsWith("greeter"));
      const thrower = rows.find((r) => r.startsWith("thrower"));
      if (!greeter || !thrower) throw new Error(`list lacks a workflow:\n${list.stdout}`);
      expect(greeter).toContain("0 0 1 1 *");
      expect(greeter).toContain("Europe/Madrid");
      expect(greeter).toContain(new Cron("0 0 1 1 *", { timezone: "Europe/Madrid", paused: true }).nextRun()!.toISOString());
      expect(greeter).toMatch(/\bok\b/);
      expect(greeter).toContain("0 handled");
      expect(thrower).toContain("30 4 1 1 *");
      expect(thrower).toContain("UTC");
      expect(thrower).toContain(new Cron("30 4 1 1 *", { timezone: "UTC", paused: true }).nextRun()!.toISOString());
      expect(thrower).toMatch(/\berror\b/);
      expect(thrower).toContain("boom from the thrower workflow");

      // Every CLI run was recorded, the dry one as such.
      const runs = await readRuns(db, "greeter");
      expect(runs.map((r) => [r.status, r.dryRun, r.trigger])).toEqual([
        ["ok", true, "manual"],
        ["ok", false, "manual"],
        ["ok", false, "manual"],
      ]);
      expect((await readRuns(db, "thrower")).map((r) => r.status)).toEqual(["error"]);
    },
    60_000,
  );
});

describe("a run over its time limit", () => {
  test(
    "is recorded as timeout, and a ctx call it makes afterwards throws and sends nothing",
    async () => {
      const { db, wfDir } = await workspace();
      const trace = join(db.dir, "late.txt");
      writeFileSync(
        join(wfDir, "late.ts"),
        `import { appendFileSync } from "node:fs";
export default {
  name: "late",
  schedule: "0 0 1 1 *",
  timeoutMs: 500,
  async run(ctx) {
    const msgs = await ctx.poll();
    // Ignores ctx.signal on purpose: it goes on after its time is up.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const msg of msgs) {
      try {
        await ctx.reply(msg, "too late for " + msg.message);
        appendFileSync(${JSON.stringify(trace)}, "sent\\n");
      } catch (err) {
        appendFileSync(${JSON.stringify(trace)}, "refused: " + String(err && err.message) + "\\n");
      }
    }
  },
};
`,
      );
      const server = await boot(db, { WORKFLOWS_DIR: wfDir });
      await waitFor("the workflow to be scheduled", 5000, () => server.stdout.includes("workflow late scheduled"), serverOutput(server));
      const phone = newPhone();
      await inbound(server, phone, "are you there?");

      // The CLI process lives until the late code has finished (its timer keeps it alive).
      const run = await runCli(["workflows", "run", "late"], { DATABASE_URL: db.url, WORKFLOWS_DIR: wfDir });
      expect(run.code).not.toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ status: "timeout", handled: 1, sends: [] });
      const trail = lines(await Bun.file(trace).text().catch(() => ""));
      expect(trail).toHaveLength(1);
      expect(trail[0]).toStartWith("refused: ");
      expect((await fullHistory(server, phone)).filter((m) => m.direction === "outbound")).toEqual([]);
      const runs = await readRuns(db, "late");
      expect(runs.map((r) => r.status)).toEqual(["timeout"]);
      expect(runs[0]!.error ?? "").toMatch(/time/i);
      expect(runs[0]!.endedAt).not.toBeNull();
    },
    30_000,
  );
});

describe("the shipped autoresponder", () => {
  test(
    "a burst of three texts gets one reply after the quiet period; a lone STOP, and a contact that opted out, get none",
    async () => {
      const { db } = await workspace();
      const fake = fakeModel();
      fake.reply({ kind: "text", text: "Thanks for writing! A person will reply soon." });
      const server = await boot(db, { WORKFLOWS_DIR: SHIPPED_WORKFLOWS, OPENAI_API_KEY: "any", OPENAI_BASE_URL: fake.baseUrl });
      await waitFor("the autoresponder to be scheduled", 5000, () => logLines(server.stdout).some((l) => l.msg === "workflow autoresponder scheduled"), serverOutput(server));

      const talker = newPhone();
      const quitter = newPhone();
      const burst = ["hi there", "are you open today?", "I need a table for two"];
      const stored: string[] = [];
      for (const text of burst) stored.push((await inbound(server, talker, text)).timestamp);
      await inbound(server, quitter, "STOP");
      // Opted out by Textwire's rule: its later texts get no reply and nothing is generated.
      const lapsed = newPhone();
      await inbound(server, lapsed, "Stop.");
      await inbound(server, lapsed, "are you still there?");

      const reply = await waitFor(
        "the autoresponder's reply",
        25_000,
        async () => (await fullHistory(server, talker)).find((m) => m.direction === "outbound"),
        serverOutput(server),
      );
      // More than a whole schedule period (5 s): a second reply would show up now.
      await Bun.sleep(7000);

      const outs = (await fullHistory(server, talker)).filter((m) => m.direction === "outbound");
      expect(outs).toHaveLength(1);
      expect(outs[0]!.message).toBe("Thanks for writing! A person will reply soon.");
      expect(outs[0]!.status).toBe("delivered");
      // The reply waited for the contact to be quiet for 5 s after the last text.
      expect(Date.parse(reply.timestamp) - Date.parse(stored.at(-1)!)).toBeGreaterThanOrEqual(5000);
      expect((await fullHistory(server, quitter)).filter((m) => m.direction === "outbound")).toEqual([]);
      expect((await fullHistory(server, lapsed)).filter((m) => m.direction === "outbound")).toEqual([]);
      expect(await readRuns(db, "autoresponder").then((runs) => runs.filter((r) => r.status === "error" || r.status === "timeout"))).toEqual([]);

      // One generation, and it saw the whole burst; the STOP was never shown to the model.
      expect(fake.requests).toHaveLength(1);
      const userTurns = fake.requests[0]!.messages.filter((m) => m.role === "user").map((m) => m.content);
      expect(userTurns).toEqual(burst);
      expect(fake.requests.some((r) => r.messages.some((m) => m.content === "STOP"))).toBe(false);
    },
    60_000,
  );

  test(
    "marks the conversation read and types while it writes (never after); a tapback and a `Loved “…”` text get no reply; a contact still typing delays it",
    async () => {
      const { db } = await workspace();
      const fake = fakeModel();
      const talker = newPhone();
      const thinker = newPhone();
      let typingWhileWriting: unknown = "not asked";
      let thinkerWritten = 0;
      fake.reply(async (req) => {
        if (lastUserTurn(req) === "hello there") typingWhileWriting = await ourTyping(db, talker);
        else thinkerWritten = Date.now();
        return { kind: "text", text: `Answer to: ${lastUserTurn(req)}` };
      });
      const server = await boot(db, { WORKFLOWS_DIR: SHIPPED_WORKFLOWS, OPENAI_API_KEY: "any", OPENAI_BASE_URL: fake.baseUrl });
      await waitFor("the autoresponder to be scheduled", 5000, () => logLines(server.stdout).some((l) => l.msg === "workflow autoresponder scheduled"), serverOutput(server));

      await inbound(server, talker, "hello there");
      const thought = await inbound(server, thinker, "so I was thinking");
      // The contact goes on typing for 12 s, then stops, as the network reports it.
      await contactDoes(server, thinker, { typing: true });
      expect((await contact(server, thinker)).typing).toBe(true);
      let typingEnds = Number.POSITIVE_INFINITY;
      const stopped = Bun.sleep(12_000).then(() => {
        typingEnds = Date.now();
        return contactDoes(server, thinker, { typing: false });
      });

      const reply = await waitFor("the reply to the talker", 20_000, async () => (await fullHistory(server, talker)).find((m) => m.direction === "outbound"), serverOutput(server));
      expect(reply.message).toBe("Answer to: hello there");
      expect(typingWhileWriting).not.toBeNull();
      expect(typingWhileWriting).not.toBe("not asked");
      expect(await ourTyping(db, talker)).toBeNull();
      expect(await contact(server, talker)).toMatchObject({ unread: 0, typing: false });

      // The contact's tapback on the reply, then an iPhone's SMS reaction quoting it: a reaction on the reply, never a message.
      const tapback = await contactDoes<{ message: { reactions: unknown[] } }>(server, talker, { reaction: { message_id: reply.id, reaction: "like" } });
      expect(tapback.message.reactions).toMatchObject([{ reaction: "like", direction: "inbound", phone: talker }]);
      expect((await inbound(server, talker, `Loved “${reply.message}”`)).message_id).toBe(reply.id);

      const answered = await waitFor("the reply to the thinker", 25_000, async () => (await fullHistory(server, thinker)).find((m) => m.direction === "outbound"), serverOutput(server));
      await stopped;
      expect(thinkerWritten).toBeGreaterThanOrEqual(typingEnds);
      expect(Date.parse(answered.timestamp) - Date.parse(thought.timestamp)).toBeGreaterThanOrEqual(12_000);
      // More than a whole schedule period since the reactions: a reply to one would show up now.
      await Bun.sleep(6000);

      const talk = await fullHistory(server, talker);
      expect(talk.map((m) => [m.direction, m.message])).toEqual([
        ["outbound", "Answer to: hello there"],
        ["inbound", "hello there"],
      ]);
      expect((talk[0] as MessageRecord & { reactions: unknown[] }).reactions).toMatchObject([{ reaction: "love", direction: "inbound", phone: talker }]);
      expect((await fullHistory(server, thinker)).filter((m) => m.direction === "outbound")).toHaveLength(1);
      expect(await ourTyping(db, thinker)).toBeNull();
      expect(fake.requests).toHaveLength(2);
      expect(await readRuns(db, "autoresponder").then((runs) => runs.filter((r) => r.status !== "ok"))).toEqual([]);
    },
    60_000,
  );

  test(
    "a generator failure leaves no typing on and sends nothing",
    async () => {
      const { db } = await workspace();
      const fake = fakeModel();
      const phone = newPhone();
      const typingWhileWriting: unknown[] = [];
      fake.reply(async () => {
        typingWhileWriting.push(await ourTyping(db, phone));
        return { kind: "status", status: 500 };
      });
      const server = await boot(db, { WORKFLOWS_DIR: SHIPPED_WORKFLOWS, OPENAI_API_KEY: "any", OPENAI_BASE_URL: fake.baseUrl });
      await waitFor("the autoresponder to be scheduled", 5000, () => logLines(server.stdout).some((l) => l.msg === "workflow autoresponder scheduled"), serverOutput(server));
      await inbound(server, phone, "anyone there?");

      await waitFor("a failed run", 20_000, async () => (await readRuns(db, "autoresponder")).some((r) => r.status === "error" && r.endedAt !== null), serverOutput(server));
      expect(typingWhileWriting.length).toBeGreaterThan(0);
      expect(typingWhileWriting[0]).not.toBeNull();
      expect(await ourTyping(db, phone)).toBeNull();
      expect((await fullHistory(server, phone)).filter((m) => m.direction === "outbound")).toEqual([]);
      // Taken up before the generator failed: marked read.
      expect((await contact(server, phone)).unread).toBe(0);
    },
    30_000,
  );

  test(
    "without OPENAI_API_KEY it logs one warning and is not scheduled",
    async () => {
      const { db } = await workspace();
      const server = await boot(db, { WORKFLOWS_DIR: SHIPPED_WORKFLOWS, OPENAI_API_KEY: undefined, OPENAI_BASE_URL: undefined });
      await inbound(server, newPhone(), "anyone there?");
      // More than one schedule period (*/5 s): a scheduled autoresponder would have run.
      await Bun.sleep(6500);

      const log = logLines(server.stdout);
      const about = log.filter((l) => l.msg.includes("autoresponder") || l.workflow === "autoresponder");
      const warnings = about.filter((l) => l.level === "warn");
      if (warnings.length !== 1) throw new Error(`expected one warning about the autoresponder, got ${warnings.length}\n${server.stdout.slice(-4000)}`);
      expect(warnings[0]!.msg).toMatch(/generator|OPENAI_API_KEY/);
      expect(about.filter((l) => /^workflow \S+ scheduled$/.test(l.msg))).toEqual([]);
      expect(about.filter((l) => l.level !== "warn")).toEqual([]);
      expect(await readRuns(db, "autoresponder")).toEqual([]);

      const list = await runCli(["workflows", "list"], { DATABASE_URL: db.url, WORKFLOWS_DIR: SHIPPED_WORKFLOWS });
      expect(list.code).toBe(0);
      expect(lines(list.stdout).find((r) => r.startsWith("autoresponder")) ?? "").toContain("not scheduled");
    },
    30_000,
  );
});
