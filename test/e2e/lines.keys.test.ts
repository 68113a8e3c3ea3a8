// Keys limited to lines (docs/lines.md "Keys limited to lines", docs/security.md): such a key
// sends and reads only through its lines, on REST, tRPC and MCP, and a refusal names the line
// and changes nothing. Two loopback lines on one server. Runs on SQLite, and on PostgreSQL
// with TEST_DIALECT=postgres.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { call, newPhone } from "./api";
import { startServer, type Server } from "./harness";

setDefaultTimeout(60_000);

let server: Server;
let limited: string;
let other: { id: string };
const clients: Client[] = [];

const refusal = (reply: { status: number; body: any }) => [reply.status, reply.body?.error?.code, reply.body?.error?.message];

beforeAll(async () => {
  server = await startServer();
  const added = await call<{ line: { id: string } }>(server, "POST", "/api/lines", { body: { name: "sales", network: "loopback" } });
  expect(added.status).toBe(201);
  other = added.body.line;
  const key = await call<{ key: string }>(server, "POST", "/api/keys", { body: { name: "default-only", scopes: ["messages:read", "messages:send"], lines: ["ln_default"] } });
  expect(key.status).toBe(201);
  limited = key.body.key;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.stop();
});

describe("a key limited to one line", () => {
  test("sends through its line; a send routed or named to another line is 403 naming it and stores nothing", async () => {
    const phone = newPhone();
    const sent = await call<{ message_id: string }>(server, "POST", "/api/send", { key: limited, body: { phone, message: "on mine" } });
    expect(sent.status).toBe(200);
    const named = await call(server, "POST", "/api/send", { key: limited, body: { phone, message: "on theirs", line: "sales" } });
    expect(refusal(named)).toEqual([403, "FORBIDDEN", `line: this key may not use ${other.id}`]);
    // Sticky: a contact whose last message was on the other line routes there, so the key may not text it.
    const theirs = newPhone();
    expect((await call(server, "POST", "/api/send", { body: { phone: theirs, message: "hello from sales", line: "sales" } })).status).toBe(200);
    const routed = await call(server, "POST", "/api/send", { key: limited, body: { phone: theirs, message: "sneaking in" } });
    expect(refusal(routed)).toEqual([403, "FORBIDDEN", `line: this key may not use ${other.id}`]);
    const history = await call<{ total: number; messages: { line_id: string }[] }>(server, "GET", `/api/messages/${encodeURIComponent(theirs)}`);
    expect(history.body.total).toBe(1);
    expect(history.body.messages.map((m) => m.line_id)).toEqual([other.id]);
  });

  test("reads name its line: history and poll without line= are 403, with its line 200, with another 403", async () => {
    const phone = newPhone();
    await call(server, "POST", "/api/send", { key: limited, body: { phone, message: "read me" } });
    const path = `/api/messages/${encodeURIComponent(phone)}`;
    expect(refusal(await call(server, "GET", path, { key: limited }))).toEqual([403, "FORBIDDEN", "line: this key may use only ln_default; name one"]);
    const mine = await call<{ total: number }>(server, "GET", `${path}?line=default`, { key: limited });
    expect([mine.status, mine.body.total]).toEqual([200, 1]);
    expect(refusal(await call(server, "GET", `${path}?line=sales`, { key: limited }))).toEqual([403, "FORBIDDEN", `line: this key may not use ${other.id}`]);
    expect(refusal(await call(server, "GET", "/api/messages/poll", { key: limited }))).toEqual([403, "FORBIDDEN", "line: this key may use only ln_default; name one"]);
    expect((await call(server, "GET", "/api/messages/poll?line=ln_default", { key: limited })).status).toBe(200);
  });

  test("what reads across every line is 403; the lines listed are its own, without settings", async () => {
    for (const path of ["/api/chats", "/api/events"]) {
      expect(refusal(await call(server, "GET", path, { key: limited }))).toEqual([403, "FORBIDDEN", "line: this key may use only ln_default; name one"]);
    }
    const lines = await call<{ lines: Record<string, unknown>[] }>(server, "GET", "/api/lines", { key: limited });
    expect(lines.body.lines.map((l) => l.id)).toEqual(["ln_default"]);
    expect(lines.body.lines[0]).not.toHaveProperty("settings");
    expect(refusal(await call(server, "GET", "/api/lines/sales", { key: limited }))).toEqual([403, "FORBIDDEN", `line: this key may not use ${other.id}`]);
  });

  test("each call of a tRPC batch is checked: the send on its line passes, the one on another line is refused", async () => {
    const phone = newPhone();
    const res = await fetch(`${server.url}/trpc/messages.send,messages.send?batch=1`, {
      method: "POST",
      headers: { authorization: `Bearer ${limited}`, "content-type": "application/json" },
      body: JSON.stringify({ 0: { phone, message: "batch mine" }, 1: { phone, message: "batch theirs", line: "sales" } }),
    });
    const body = (await res.json()) as { result?: unknown; error?: { data: { code: string } ; message: string } }[];
    expect(body[0]!.result).toBeDefined();
    expect([body[1]!.error?.data.code, body[1]!.error?.message]).toEqual(["FORBIDDEN", `line: this key may not use ${other.id}`]);
    expect((await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`)).body.total).toBe(1);
  });

  test("MCP: send_message on another line is refused naming it; on its line it sends", async () => {
    const client = new Client({ name: "textwire-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${limited}` } } }));
    clients.push(client);
    const phone = newPhone();
    const ok = (await client.callTool({ name: "send_message", arguments: { phone, message: "mcp mine", idempotency_key: `k-${phone}` } })) as CallToolResult;
    expect(ok.isError).toBeFalsy();
    const refused = (await client.callTool({ name: "send_message", arguments: { phone, message: "mcp theirs", line: "sales", idempotency_key: `k2-${phone}` } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect((refused.content[0] as { text: string }).text).toBe(`line: this key may not use ${other.id}`);
  });
});
