// Scoped keys (docs/security.md), tried as an attacker would against the real server: a key
// holds only what it was given, on every surface (REST, each call of a tRPC batch, MCP, the
// console's session), a refusal names what is missing and changes nothing, a keys:manage key
// never makes a key wider than itself, and a `reach: "known"` key cannot text a stranger by
// any route. Runs on SQLite, and on PostgreSQL with TEST_DIALECT=postgres.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { call, history as historyOf, inbound, newPhone } from "./api";
import { startServer, type Server } from "./harness";

setDefaultTimeout(60_000);

let server: Server;
const clients: Client[] = [];

interface ApiKey {
  id: string;
  name: string;
  scopes: string[];
  lines: string[] | null;
  reach: string;
  expires_at: string | null;
  created_by: string | null;
  last_used_at: string | null;
}

/** POST /api/keys with `as` (the server's own key by default): the reply. */
function createKey(body: Record<string, unknown>, as?: string) {
  return call<{ success: boolean; key: string; api_key: ApiKey; error: { code: string; message: string } }>(server, "POST", "/api/keys", { body, ...(as ? { key: as } : {}) });
}

async function newKey(body: Record<string, unknown>): Promise<{ key: string; record: ApiKey }> {
  const reply = await createKey(body);
  expect(reply.status).toBe(201);
  return { key: reply.body.key, record: reply.body.api_key };
}

/** A refusal's status and message, from the REST envelope. */
const refusal = (reply: { status: number; body: any }) => [reply.status, reply.body?.error?.message];

async function total(phone: string): Promise<number> {
  return (await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`)).body.total;
}

async function mcp(key: string): Promise<Client> {
  const client = new Client({ name: "textwire-e2e", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  clients.push(client);
  return client;
}

const toolText = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

beforeAll(async () => {
  // Webhook endpoints on 127.0.0.1 (network tests talk only to it): nothing listens there, deliveries just fail.
  server = await startServer({ env: { ALLOW_PRIVATE_URLS: "true" } });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});

describe("a key made with messages:read alone reads, and is refused every write, naming the scope", () => {
  let reader = "";
  const known = newPhone();

  beforeAll(async () => {
    const made = await newKey({ name: "reader", scopes: ["messages:read"] });
    reader = made.key;
    expect(made.record).toMatchObject({ name: "reader", scopes: ["messages:read"], lines: null, reach: "any", expires_at: null, created_by: "env:0", last_used_at: null });
    await inbound(server, known, "hello");
  });

  test("REST: reads answer; every write is 403 naming what it lacks, and nothing changes", async () => {
    expect((await call(server, "GET", "/api/messages/poll", { key: reader })).status).toBe(200);
    expect((await call(server, "GET", `/api/messages/${encodeURIComponent(known)}`, { key: reader })).status).toBe(200);
    expect((await call(server, "GET", "/api/events", { key: reader })).status).toBe(200);
    const before = await total(known);
    const writes: [string, string, unknown, string][] = [
      ["POST", "/api/send", { phone: known, message: "no" }, "messages:send"],
      ["POST", "/api/send", { phone: known, message: "later", send_at: new Date(Date.now() + 3_600_000).toISOString() }, "messages:send"],
      ["POST", "/api/generate", { phone: known, context: [{ role: "user", content: "hi" }], auto_send: true }, "messages:send"],
      ["POST", "/api/generate", { phone: known, context: [{ role: "user", content: "hi" }] }, "drafts:write"],
      ["POST", "/api/chats", { participants: [known, newPhone()], message: "group" }, "messages:send"],
      ["POST", "/api/webhook-endpoints", { url: "https://127.0.0.1:9/hook" }, "webhooks:manage"],
      ["POST", "/api/keys", { name: "more" }, "keys:manage"],
      ["GET", "/api/keys", undefined, "keys:manage"],
      ["DELETE", "/api/keys/reader", undefined, "keys:manage"],
    ];
    for (const [method, path, body, scope] of writes) {
      const reply = await call(server, method, path, { key: reader, ...(body === undefined ? {} : { body }) });
      expect([path, ...refusal(reply)]).toEqual([path, 403, `scope: this key lacks ${scope}`]);
      expect((reply.body as any).error.code).toBe("FORBIDDEN");
    }
    expect(await total(known)).toBe(before);
    expect((await call<{ endpoints: unknown[] }>(server, "GET", "/api/webhook-endpoints")).body.endpoints).toEqual([]);
  });

  test("tRPC: each call of a batch is checked on its own", async () => {
    const input = encodeURIComponent(JSON.stringify({ 0: { phone: known }, 1: {} }));
    const reads = await call<any[]>(server, "GET", `/trpc/messages.history,keys.list?batch=1&input=${input}`, { key: reader });
    expect(reads.body[0].result.data.total).toBeGreaterThan(0);
    expect(reads.body[1].error).toMatchObject({ message: "scope: this key lacks keys:manage", data: { code: "FORBIDDEN", httpStatus: 403 } });

    const before = await total(known);
    const writes = await call<any[]>(server, "POST", "/trpc/messages.send,webhookEndpoints.create,keys.create?batch=1", {
      key: reader,
      body: { 0: { phone: known, message: "no" }, 1: { url: "https://127.0.0.1:9/hook" }, 2: { name: "batch-made" } },
    });
    expect(writes.body.map((r) => r.error?.message)).toEqual([
      "scope: this key lacks messages:send",
      "scope: this key lacks webhooks:manage",
      "scope: this key lacks keys:manage",
    ]);
    expect(await total(known)).toBe(before);
  });

  test("MCP: tools/list shows only the tools it may call; a write tool is refused naming the scope", async () => {
    const client = await mcp(reader);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(["get_contact", "get_history", "list_conversations", "list_lines", "poll_inbound"]);
    expect((await client.callTool({ name: "get_history", arguments: { phone: known } })).isError).toBeFalsy();
    const before = await total(known);
    const sent = await client.callTool({ name: "send_message", arguments: { phone: known, message: "no", idempotency_key: "k1" } });
    expect(sent.isError).toBe(true);
    expect(toolText(sent)).toBe("scope: this key lacks messages:send");
    expect(await total(known)).toBe(before);
  });

  test("the console: a session holds its key's scopes, says them, and is refused writes", async () => {
    const signIn = await call<{ csrf_token: string }>(server, "POST", "/console/session", { body: { key: reader }, key: null, headers: { origin: server.url } });
    expect(signIn.status).toBe(200);
    const cookie = /textwire_session=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")![1]!;
    const headers = { cookie: `textwire_session=${cookie}`, origin: server.url, "x-csrf-token": signIn.body.csrf_token };
    const info = await call<any>(server, "GET", "/trpc/system.info", { key: null, headers });
    expect(info.body.result.data).toMatchObject({ scopes: ["messages:read"], reach: "any" });
    const before = await total(known);
    const sent = await call<any>(server, "POST", "/trpc/messages.send", { key: null, headers, body: { phone: known, message: "no" } });
    expect([sent.status, sent.body.error.message]).toEqual([403, "scope: this key lacks messages:send"]);
    const keys = await call<any>(server, "GET", "/trpc/keys.list", { key: null, headers });
    expect([keys.status, keys.body.error.message]).toEqual([403, "scope: this key lacks keys:manage"]);
    expect(await total(known)).toBe(before);
  });

  test("its record says when it was last used", async () => {
    const listed = await call<{ api_keys: ApiKey[] }>(server, "GET", "/api/keys");
    expect(listed.body.api_keys.find((k) => k.name === "reader")?.last_used_at).toEqual(expect.any(String));
  });
});

describe("key management", () => {
  let manager = "";
  let managerId = "";

  beforeAll(async () => {
    const made = await newKey({ name: "manager", scopes: ["keys:manage", "messages:read"] });
    manager = made.key;
    managerId = made.record.id;
  });

  test("a keys:manage key cannot create a key wider than itself", async () => {
    const wider: [Record<string, unknown>, string][] = [
      [{ name: "w1" }, "scopes: this key lacks *"],
      [{ name: "w2", scopes: ["messages:send"] }, "scopes: this key lacks messages:send"],
      [{ name: "w3", scopes: ["messages:read", "webhooks:manage"] }, "scopes: this key lacks webhooks:manage"],
    ];
    for (const [body, what] of wider) {
      expect(refusal(await createKey(body, manager))).toEqual([403, `${what}; a key cannot create a key wider than itself`]);
    }
    const names = (await call<{ api_keys: ApiKey[] }>(server, "GET", "/api/keys")).body.api_keys.map((k) => k.name);
    expect(names.filter((n) => /^w\d$/.test(n))).toEqual([]);

    const narrower = await createKey({ name: "narrower", scopes: ["messages:read"], reach: "known" }, manager);
    expect(narrower.status).toBe(201);
    expect(narrower.body.api_key).toMatchObject({ scopes: ["messages:read"], reach: "known", created_by: managerId });
  });

  test("limits left out are the creator's; a known-reach key cannot give any reach", async () => {
    const limited = await newKey({ name: "limited", scopes: ["keys:manage", "messages:send"], reach: "known", lines: ["ln_a"], expires_at: "2099-01-01T00:00:00Z" });
    const child = await createKey({ name: "child", scopes: ["messages:send"] }, limited.key);
    expect(child.body.api_key).toMatchObject({ lines: ["ln_a"], reach: "known", expires_at: "2099-01-01T00:00:00.000Z" });
    expect(refusal(await createKey({ name: "child2", scopes: ["messages:send"], reach: "any" }, limited.key))).toEqual([
      403,
      'reach: this key may only reach "known" contacts; a key cannot create a key wider than itself',
    ]);
    expect(refusal(await createKey({ name: "child3", scopes: ["messages:send"], lines: null }, limited.key))[1]).toStartWith("lines: this key may not use every line");
    expect(refusal(await createKey({ name: "child4", scopes: ["messages:send"], expires_at: null }, limited.key))[1]).toStartWith("expires_at: ");
  });

  test("it cannot revoke the operator's key: not an API_KEYS key, nor a key wider than itself", async () => {
    expect(refusal(await call(server, "DELETE", "/api/keys/env:0", { key: manager }))).toEqual([
      403,
      "id: a key from API_KEYS cannot be revoked through the API; remove it from API_KEYS",
    ]);
    const operator = await newKey({ name: "operator" });
    expect(refusal(await call(server, "DELETE", "/api/keys/operator", { key: manager }))).toEqual([
      403,
      "scopes: this key lacks *; a key cannot revoke a key wider than itself",
    ]);
    expect((await call(server, "GET", "/api/messages/poll", { key: operator.key })).status).toBe(200);
    // A key it may revoke: by name or id, answered with the record.
    const revoked = await call<{ api_key: ApiKey & { revoked_at: string } }>(server, "DELETE", "/api/keys/narrower", { key: manager });
    expect(revoked.status).toBe(200);
    expect(revoked.body.api_key).toMatchObject({ name: "narrower", revoked_at: expect.any(String) });
  });

  test("key and webhook endpoint changes are events naming the acting key", async () => {
    const events = async (type: string) =>
      (await call<{ events: { type: string; data: { actor_key_id: string | null; api_key?: ApiKey; endpoint?: { id: string } } }[] }>(server, "GET", `/api/events?type=${type}`)).body.events;
    const created = await events("key.created");
    expect(created.find((e) => e.data.api_key?.name === "manager")?.data.actor_key_id).toBe("env:0");
    expect(created.find((e) => e.data.api_key?.name === "narrower")?.data.actor_key_id).toBe(managerId);
    expect(JSON.stringify(created)).not.toContain(manager.slice(10));
    const revoked = await events("key.revoked");
    expect(revoked.find((e) => e.data.api_key?.name === "narrower")?.data.actor_key_id).toBe(managerId);

    const hooks = await newKey({ name: "hooks", scopes: ["webhooks:manage"] });
    const endpoint = await call<{ endpoint: { id: string; secret: string } }>(server, "POST", "/api/webhook-endpoints", { key: hooks.key, body: { url: "https://127.0.0.1:9/hook" } });
    expect(endpoint.status).toBe(201);
    expect((await call(server, "PATCH", `/api/webhook-endpoints/${endpoint.body.endpoint.id}`, { key: hooks.key, body: { enabled: false } })).status).toBe(200);
    expect((await call(server, "DELETE", `/api/webhook-endpoints/${endpoint.body.endpoint.id}`, { key: hooks.key })).status).toBe(200);
    for (const type of ["webhook_endpoint.created", "webhook_endpoint.updated", "webhook_endpoint.deleted"]) {
      const [event] = (await events(type)).filter((e) => e.data.endpoint?.id === endpoint.body.endpoint.id);
      expect([type, event?.data.actor_key_id]).toEqual([type, hooks.record.id]);
    }
    expect(JSON.stringify(await events("webhook_endpoint.created"))).not.toContain(endpoint.body.endpoint.secret);
  });

  test("an expired key is 401", async () => {
    const expired = await newKey({ name: "expired", expires_at: "2020-01-01T00:00:00Z" });
    const reply = await call(server, "GET", "/api/messages/poll", { key: expired.key });
    expect(reply.status).toBe(401);
    expect(reply.headers.get("www-authenticate")).toBe("Bearer");
  });
});

describe('a reach: "known" key cannot text a stranger by any route', () => {
  let agent = "";
  const friend = newPhone();
  const stranger = newPhone();
  const phoneRefusal = (phone: string) => `phone: this key may only write to contacts who wrote first (${phone} has not)`;

  beforeAll(async () => {
    agent = (await newKey({ name: "agent", scopes: ["messages:read", "messages:send"], reach: "known" })).key;
    await inbound(server, friend, "hi, it's me");
  });

  test("send, scheduled send, generate with auto_send, a new group, a new participant: 403 naming the phone, nothing stored", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const routes: [string, string, unknown][] = [
      ["POST", "/api/send", { phone: stranger, message: "hi" }],
      ["POST", "/api/send", { phone: stranger, message: "hi later", send_at: later }],
      ["POST", "/api/generate", { phone: stranger, context: [{ role: "user", content: "hi" }], auto_send: true }],
      ["POST", "/api/chats", { participants: [friend, stranger], message: "group" }],
    ];
    for (const [method, path, body] of routes) {
      expect([path, ...refusal(await call(server, method, path, { key: agent, body }))]).toEqual([path, 403, phoneRefusal(stranger)]);
    }
    expect(await total(stranger)).toBe(0);
    const chats = await call<{ chats: unknown[] }>(server, "GET", "/api/chats?kind=group");
    expect(JSON.stringify(chats.body.chats)).not.toContain(stranger);
  });

  test("into an existing group, a stranger cannot be added", async () => {
    const family = { id: `family-${Date.now()}`, name: "Family", participants: [friend, newPhone()] };
    await call(server, "POST", "/webhooks/loopback", { body: { phone: friend, message: "group hello", chat: family } });
    const groupId = (await call<{ chats: { id: string; name: string }[] }>(server, "GET", "/api/chats?kind=group")).body.chats.find((c) => c.name === "Family")!.id;
    const added = await call(server, "POST", `/api/chats/${groupId}/participants`, { key: agent, body: { phone: stranger } });
    expect(refusal(added)).toEqual([403, phoneRefusal(stranger)]);
    // A chat that exists may be written to.
    expect((await call(server, "POST", "/api/send", { key: agent, body: { chat_id: groupId, message: "to the group" } })).status).toBe(200);
  });

  test("MCP send_message is refused the same way; a contact who wrote first can be texted", async () => {
    const client = await mcp(agent);
    const refused = await client.callTool({ name: "send_message", arguments: { phone: stranger, message: "hi", idempotency_key: "mcp-1" } });
    expect([refused.isError, toolText(refused)]).toEqual([true, phoneRefusal(stranger)]);
    expect(await total(stranger)).toBe(0);
    const sent = await client.callTool({ name: "send_message", arguments: { phone: friend, message: "hello again", idempotency_key: "mcp-2" } });
    expect(sent.isError).toBeFalsy();
    expect((await call(server, "POST", "/api/send", { key: agent, body: { phone: friend, message: "and by REST" } })).status).toBe(200);
  });
});

describe("drafts:write: its every send is a draft, and it never decides drafts", () => {
  test("send and generate with auto_send are stored as drafts (nothing goes out); approving or rejecting is 403, even with drafts:approve", async () => {
    const drafter = (await newKey({ name: "drafter", scopes: ["drafts:write", "drafts:approve", "messages:read"], reach: "known" })).key;
    const phone = newPhone();
    await inbound(server, phone, "hello?");
    const proposed = await call<{ message_id: string; status: string }>(server, "POST", "/api/send", { key: drafter, body: { phone, message: "a proposal" } });
    expect([proposed.status, proposed.body.status]).toEqual([200, "draft"]);
    // Its reach holds for drafts too.
    expect(refusal(await call(server, "POST", "/api/send", { key: drafter, body: { phone: newPhone(), message: "no" } }))).toEqual([403, expect.stringContaining("phone: this key may only write to contacts who wrote first")]);
    expect(refusal(await call(server, "POST", `/api/messages/${proposed.body.message_id}/approve`, { key: drafter, body: {} }))).toEqual([
      403,
      "scope: a key that may only draft (drafts:write without messages:send) cannot approve or reject drafts",
    ]);
    expect(refusal(await call(server, "POST", `/api/messages/${proposed.body.message_id}/reject`, { key: drafter }))).toEqual([403, expect.stringContaining("cannot approve or reject drafts")]);
    expect((await historyOf(server, phone)).messages.map((m) => [m.direction, m.status])).toEqual([["outbound", "draft"], ["inbound", "received"]]);
    // No generator on this server: past the scope check, the answer is the generator's 503.
    const generated = await call<any>(server, "POST", "/api/generate", { key: drafter, body: { phone, context: [{ role: "user", content: "hi" }] } });
    expect(generated.status).toBe(503);
    const client = await mcp(drafter);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["generate_reply", "get_contact", "get_history", "list_conversations", "list_lines", "poll_inbound", "send_message"]);
    // MCP's send_message answers the record: a draft.
    const sent = await client.callTool({ name: "send_message", arguments: { phone, message: "from the agent", idempotency_key: "agent-1" } });
    expect((sent.structuredContent as { status: string }).status).toBe("draft");
  });
});
