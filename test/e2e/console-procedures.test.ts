// The procedures the operator console calls (docs/api.md "tRPC"): through the typed tRPC
// client against the real server, with the same auth and validation as every procedure,
// and answers exactly as their documented schemas say (they are not re-checked per response).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTRPCClient, httpLink } from "@trpc/client";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { z } from "zod";
import { createdKeyOutput, keysOutput } from "../../src/auth/keys";
import { createClient, type AppRouter } from "../../src/client";
import { systemInfoOutput } from "../../src/api/routers/system";
import { conversationsOutput } from "../../src/messages/conversations";
import { runNowOutput, runsOutput, workflowsOutput } from "../../src/workflows/overview";
import { call, history, inbound, newPhone, send, trpcFailure as failure } from "./api";
import { startServer, testDatabase, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
let client: ReturnType<typeof createClient>;
let wfDir: string;

/** Replies to every inbound message after its cursor but opted-out contacts'; never runs on its own (1 January only). */
const GREETER = `export default {
  name: "greeter",
  schedule: "0 0 1 1 *",
  async run(ctx) {
    for (const msg of await ctx.poll()) if (!(await ctx.optedOut(msg.phone))) await ctx.reply(msg, "hello, " + msg.message);
  },
};
`;
/** Needs the generator, which these servers lack. */
const WRITER = `export default {
  name: "writer",
  schedule: "0 0 1 1 *",
  requires: ["generator"],
  async run() {},
};
`;

beforeAll(async () => {
  const db = await testDatabase();
  wfDir = join(db.dir, "workflows");
  mkdirSync(wfDir);
  writeFileSync(join(wfDir, "greeter.ts"), GREETER);
  writeFileSync(join(wfDir, "writer.ts"), WRITER);
  server = await startServer({ db, env: { WORKFLOWS_DIR: wfDir, OPENAI_API_KEY: undefined } });
  client = createClient({ url: server.url, apiKey: server.apiKey });
}, 60_000);
afterAll(() => server?.kill());

/** The answer, checked to be exactly what its schema documents (no field more, none missing). */
function documented<S extends z.ZodType>(schema: S, answer: unknown): z.output<S> {
  const parsed = schema.safeParse(answer);
  if (!parsed.success) throw new Error(`answer does not match its schema: ${parsed.error.message}\n${JSON.stringify(answer)}`);
  expect(parsed.data as unknown).toEqual(answer);
  return parsed.data;
}

describe("conversations.list", () => {
  test("one per phone, the most recently active first, with its last message and opt-out; search and limit", async () => {
    const [a, b, c] = [newPhone(), newPhone(), newPhone()];
    await send(server, a, "to a");
    const fromB = await inbound(server, b, "from b");
    await inbound(server, c, "STOP");
    const lastA = await inbound(server, a, "a again");

    const { conversations } = documented(conversationsOutput, await client.conversations.list.query({}));
    const mine = conversations.filter((x) => [a, b, c].includes(x.phone));
    expect(mine.map((x) => [x.phone, x.last_message.message, x.opted_out])).toEqual([
      [a, "a again", false],
      [c, "STOP", true],
      [b, "from b", false],
    ]);
    expect(mine[0]!.last_message).toMatchObject({ id: lastA.message_id, timestamp: lastA.timestamp, direction: "inbound", status: "received" });
    expect(mine[2]!.last_message.id).toBe(fromB.message_id);

    // The number's last four digits, then its country code and area: any part matches.
    const byEnd = await client.conversations.list.query({ search: b.slice(-4) });
    expect(byEnd.conversations.map((x) => x.phone)).toEqual([b]);
    const byArea = await client.conversations.list.query({ search: "+1415" });
    expect(byArea.conversations.map((x) => x.phone)).toEqual(conversations.map((x) => x.phone));
    expect((await client.conversations.list.query({ limit: 1 })).conversations.map((x) => x.phone)).toEqual([conversations[0]!.phone]);
    // No input at all is the default page.
    expect(await client.conversations.list.query()).toEqual({ conversations });
  });

  test("line keeps the conversations whose newest message is on that line (by id or name)", async () => {
    const [a, b] = [newPhone(), newPhone()];
    const { line: sales } = await client.lines.create.mutate({ name: "sales", network: "loopback" });
    await send(server, a, "on default");
    await client.messages.send.mutate({ phone: b, message: "on sales", line: "sales" });
    const phones = async (line: string) => (await client.conversations.list.query({ line })).conversations.map((x) => x.phone);
    expect(await phones("sales")).toEqual([b]);
    expect(await phones(sales.id)).toEqual([b]);
    expect(await phones("default")).toContain(a);
    expect(await phones("default")).not.toContain(b);
  });

  test("bad input names the field", async () => {
    for (const [input, field] of [
      [{ search: "41a5" }, "search"],
      [{ search: "1".repeat(17) }, "search"],
      [{ search: "" }, "search"],
      [{ limit: 0 }, "limit"],
      [{ limit: 201 }, "limit"],
      [{ line: "no-such-line" }, "line"],
      [{ line: "" }, "line"],
    ] as const) {
      const e = await failure(client.conversations.list.query(input));
      expect(e.code).toBe("BAD_REQUEST");
      expect(e.message).toStartWith(`${field}: `);
    }
  });
});

describe("keys", () => {
  test("create shows the key once and it works; list shows it; revoke ends it", async () => {
    const created = documented(createdKeyOutput, await client.keys.create.mutate({ name: "console-made" }));
    expect(created.key).toMatch(/^tw_[A-Za-z0-9_-]{40,}$/);
    expect(created.api_key).toMatchObject({ name: "console-made", prefix: created.key.slice(0, 10), scopes: ["*"], revoked_at: null });
    const phone = newPhone();
    expect((await call(server, "POST", "/api/send", { body: { phone, message: "with the new key" }, key: created.key })).status).toBe(200);

    const listed = documented(keysOutput, await client.keys.list.query());
    const { last_used_at, ...listedKey } = listed.api_keys.find((k) => k.name === "console-made")!;
    const { last_used_at: unused, ...createdKey } = created.api_key;
    expect(unused).toBeNull();
    expect(listedKey).toEqual(createdKey);
    // Used once since: last_used_at says when (to within a minute).
    expect(last_used_at).toEqual(expect.any(String));
    expect(JSON.stringify(listed)).not.toContain(created.key.slice(10));

    const again = await failure(client.keys.create.mutate({ name: "console-made" }));
    expect(again.code).toBe("CONFLICT");
    expect(again.message).toStartWith("name: ");

    expect(await client.keys.revoke.mutate({ id: "console-made" })).toMatchObject({ success: true, api_key: { name: "console-made", revoked_at: expect.any(String) } });
    expect((await call(server, "GET", `/api/messages/${encodeURIComponent(phone)}`, { key: created.key })).status).toBe(401);
    const revoked = (await client.keys.list.query()).api_keys.find((k) => k.name === "console-made");
    expect(revoked?.revoked_at).toEqual(expect.any(String));

    const gone = await failure(client.keys.revoke.mutate({ id: "console-made" }));
    expect(gone.code).toBe("NOT_FOUND");
    expect(gone.message).toBe('id: no key in use has the id or name "console-made"');
  });

  test("a bad name is BAD_REQUEST naming name", async () => {
    for (const name of ["has space", "", "x".repeat(65)]) {
      const e = await failure(client.keys.create.mutate({ name }));
      expect(e.code).toBe("BAD_REQUEST");
      expect(e.message).toStartWith("name: ");
    }
    const e = await failure(client.keys.revoke.mutate({ id: 42 as unknown as string }));
    expect(e).toEqual({ code: "BAD_REQUEST", message: "id: must be a string" });
  });
});

describe("workflows", () => {
  test("list: schedule, next run, what is unmet, last run", async () => {
    const { workflows } = documented(workflowsOutput, await client.workflows.list.query());
    expect(workflows.map((w) => w.name)).toEqual(["greeter", "writer"]);
    const [greeter, writer] = workflows;
    expect(greeter).toMatchObject({ schedule: "0 0 1 1 *", timezone: "UTC", unmet: null });
    expect(greeter!.next_run).toMatch(/^\d{4}-01-01T00:00:00\.000Z$/);
    expect(writer).toMatchObject({ next_run: null, last_run: null });
    expect(writer!.unmet).toContain("OPENAI_API_KEY");
  });

  test("a dry run sends nothing; a run now sends; runs lists both, newest first", async () => {
    const phone = newPhone();
    await inbound(server, phone, "knock knock");

    const dry = documented(runNowOutput, await client.workflows.run.mutate({ name: "greeter", dry_run: true }));
    expect(dry).toMatchObject({ status: "ok", run_id: expect.any(String) });
    expect(dry.sends.filter((s) => s.phone === phone)).toEqual([{ phone, message: "hello, knock knock" }]);
    expect((await history(server, phone)).messages.map((m) => m.direction)).toEqual(["inbound"]);

    const real = documented(runNowOutput, await client.workflows.run.mutate({ name: "greeter" }));
    expect(real.status).toBe("ok");
    const sent = real.sends.find((s) => s.phone === phone);
    expect(sent).toEqual({ phone, message: "hello, knock knock", message_id: expect.any(String), status: "delivered" });
    const outs = (await history(server, phone)).messages.filter((m) => m.direction === "outbound");
    expect(outs.map((m) => [m.id, m.message])).toEqual([[sent!.message_id!, "hello, knock knock"]]);

    const { runs } = documented(runsOutput, await client.workflows.runs.query({ name: "greeter" }));
    expect(runs.slice(0, 2).map((r): unknown[] => [r.id, r.trigger, r.dry_run, r.status])).toEqual([
      [real.run_id, "manual", false, "ok"],
      [dry.run_id, "manual", true, "ok"],
    ]);
    expect(runs.every((r) => r.workflow === "greeter")).toBe(true);
    expect(runs[0]!.handled).toBe(real.handled);
    expect(runs[0]!.ended_at).toEqual(expect.any(String));
    expect((await client.workflows.runs.query({ name: "greeter", limit: 1 })).runs.map((r) => r.id)).toEqual([real.run_id!]);
    const listed = (await client.workflows.list.query()).workflows.find((w) => w.name === "greeter");
    expect(listed?.last_run).toEqual(runs[0]!);
  });

  test("an unknown workflow is 404 naming name; an unmet requirement 503; bad input names the field", async () => {
    for (const attempt of [client.workflows.run.mutate({ name: "nope" }), client.workflows.runs.query({ name: "nope" })]) {
      expect(await failure(attempt)).toEqual({ code: "NOT_FOUND", message: 'name: no workflow named "nope"' });
    }
    const unmet = await failure(client.workflows.run.mutate({ name: "writer" }));
    expect(unmet.code).toBe("SERVICE_UNAVAILABLE");
    expect(unmet.message).toContain("OPENAI_API_KEY");
    expect((await client.workflows.runs.query({ name: "writer" })).runs).toEqual([]);

    for (const [attempt, field] of [
      [client.workflows.run.mutate({ name: "greeter", dry_run: "yes" as unknown as boolean }), "dry_run"],
      [client.workflows.run.mutate({ name: "" }), "name"],
      [client.workflows.runs.query({ name: "greeter", limit: 101 }), "limit"],
    ] as const) {
      const e = await failure(attempt);
      expect(e.code).toBe("BAD_REQUEST");
      expect(e.message).toStartWith(`${field}: `);
    }
  });
});

test("system.info: network, generator, workflows folder", async () => {
  expect(documented(systemInfoOutput, await client.system.info.query())).toEqual({
    network: "loopback",
    generator: false,
    workflows_dir: wfDir,
    scopes: ["messages:read", "messages:send", "drafts:write", "drafts:approve", "webhooks:manage", "lines:manage", "workflows:manage", "keys:manage"],
    reach: "any",
  });
});

test("every console procedure is 401 without a key, and none is a REST route", async () => {
  const anonymous = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${server.url}/trpc` })] });
  const attempts = [
    anonymous.conversations.list.query({}),
    anonymous.keys.list.query(),
    anonymous.keys.create.mutate({ name: "sneaky" }),
    anonymous.keys.revoke.mutate({ id: "sneaky" }),
    anonymous.workflows.list.query(),
    anonymous.workflows.runs.query({ name: "greeter" }),
    anonymous.workflows.run.mutate({ name: "greeter" }),
    anonymous.system.info.query(),
  ];
  for (const attempt of attempts) expect((await failure(attempt)).code).toBe("UNAUTHORIZED");
  expect((await client.keys.list.query()).api_keys.map((k) => k.name)).not.toContain("sneaky");
  // Keys are REST routes too (/api/keys); the console's other procedures are not.
  const document = (await call<{ paths: Record<string, unknown> }>(server, "GET", "/openapi.json")).body;
  expect(Object.keys(document.paths).filter((p) => /conversation|keys|workflow|system/.test(p))).toEqual(["/api/keys", "/api/keys/{id}"]);
});

test("WORKFLOWS_DIR=off: no workflows, a run is 404, system.info says null", async () => {
  const off = await startServer({ env: { WORKFLOWS_DIR: "off" } });
  try {
    const offClient = createClient({ url: off.url, apiKey: off.apiKey });
    expect(await offClient.workflows.list.query()).toEqual({ workflows: [] });
    expect(await failure(offClient.workflows.run.mutate({ name: "greeter" }))).toEqual({ code: "NOT_FOUND", message: 'name: no workflow named "greeter"' });
    expect((await offClient.system.info.query()).workflows_dir).toBeNull();
  } finally {
    off.kill();
  }
});
