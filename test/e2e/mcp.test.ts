// The MCP server (docs/mcp.md) through the SDK's own client: Streamable HTTP against the real
// server at /mcp, and stdio against `bun src/cli.ts mcp` talking to that server.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startFakeOpenAI } from "../support/fake-openai";
import { startFakeTwilio, twilioEnv, type FakeTwilio } from "../support/fake-twilio";
import { call, expectTimestamp, history, inbound, newPhone, type MessageRecord } from "./api";
import { newApiKey, ROOT, runCli, startServer, type Server } from "./harness";

setDefaultTimeout(30_000);

const ALLOWED_ORIGIN = "http://agents.example.test";
const TOOLS = ["send_message", "get_history", "poll_inbound", "list_conversations", "generate_reply", "get_contact", "react", "list_lines", "cancel_scheduled"];

const model = startFakeOpenAI();
let twilio: FakeTwilio;
/** Loopback network, a generator, and one allowed browser origin. */
let server: Server;
/** Twilio's stand-in as the network, two keys with a small bucket each (12 tokens, 1 a minute). */
let limited: Server;
const otherKey = newApiKey();
const clients: Client[] = [];

beforeAll(async () => {
  twilio = startFakeTwilio();
  const limitedKey = newApiKey();
  [server, limited] = await Promise.all([
    startServer({ env: { OPENAI_API_KEY: "sk-local-test", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "tiny-test-model", MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN } }),
    startServer({ apiKey: limitedKey, env: twilioEnv(twilio, { API_KEYS: `${limitedKey},${otherKey}`, RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "12" }) }),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  server?.kill();
  limited?.kill();
  await Promise.all([model.stop(), twilio?.stop()]);
}, 30_000);

/** An SDK client connected over Streamable HTTP to `target`'s /mcp. */
async function connect(target: Server, opts: { key?: string; headers?: Record<string, string> } = {}): Promise<Client> {
  const client = new Client({ name: "textwire-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${target.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${opts.key ?? target.apiKey}`, ...opts.headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

let onLimited: Client | undefined;
/** One client for the Twilio server's first key (its tokens are counted: 2 to connect). */
async function limitedClient(): Promise<Client> {
  onLimited ??= await connect(limited);
  return onLimited;
}

let shared: Client | undefined;
/** One client for the loopback server, its tools listed (so callTool checks results against their output schemas). */
async function mcp(): Promise<Client> {
  if (!shared) {
    shared = await connect(server);
    await shared.listTools();
  }
  return shared;
}

/** A tool's structured result; fails with the tool's text when it refused. */
async function use<T = Record<string, unknown>>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} refused: ${JSON.stringify(result.content)}`);
  // The text is the structured result as JSON, for hosts that read only text.
  expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent!);
  return result.structuredContent as T;
}

/** A refusal: isError, and its text (the API's error message). */
async function refusal(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return (result.content[0] as { text: string }).text;
}

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

describe("tools/list", () => {
  test("the nine tools, each with input and output schemas, arguments as documented, and hints", async () => {
    const { tools } = await (await mcp()).listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    const args = (name: string) => Object.keys(byName[name]!.inputSchema.properties ?? {});
    expect(args("send_message")).toEqual(["phone", "chat_id", "message", "media_urls", "reply_to", "line", "send_at", "idempotency_key"]);
    expect(args("get_history")).toEqual(["phone", "limit", "offset"]);
    expect(args("poll_inbound")).toEqual(["since", "phone", "limit"]);
    expect(args("list_conversations")).toEqual(["query", "limit"]);
    expect(args("generate_reply").sort()).toEqual(["auto_send", "context", "instructions", "language", "phone"]);
    expect(args("get_contact")).toEqual(["phone"]);
    expect(args("react")).toEqual(["message_id", "reaction"]);
    expect(args("cancel_scheduled")).toEqual(["message_id"]);
    expect(args("list_lines")).toEqual([]);
    expect(byName.send_message!.inputSchema.required).toEqual(["message"]);
    expect(byName.generate_reply!.inputSchema.required).toEqual(["phone"]);
    expect(byName.get_history!.inputSchema.properties!.limit).toMatchObject({ type: "integer", minimum: 1, default: 50 });
    expect(byName.react!.inputSchema.properties!.reaction).toMatchObject({ enum: ["love", "like", "dislike", "laugh", "emphasize", "question"] });
    for (const t of tools) {
      expect(t.description!.length).toBeGreaterThan(60);
      expect(t.outputSchema?.type).toBe("object");
    }
    expect(Object.keys(byName.poll_inbound!.outputSchema!.properties!)).toEqual(["messages", "has_more", "next_since"]);
    expect(Object.keys(byName.get_history!.outputSchema!.properties!)).toEqual(expect.arrayContaining(["messages", "total"]));
    for (const name of ["get_history", "poll_inbound", "list_conversations", "get_contact", "list_lines"]) expect(byName[name]!.annotations?.readOnlyHint).toBe(true);
    for (const name of ["send_message", "generate_reply", "react", "cancel_scheduled"]) expect(byName[name]!.annotations?.readOnlyHint).toBe(false);
    expect(byName.send_message!.annotations).toMatchObject({ destructiveHint: true, idempotentHint: false, openWorldHint: true });
    expect(byName.cancel_scheduled!.annotations?.destructiveHint).toBe(true);
    expect(byName.react!.annotations).toMatchObject({ destructiveHint: false, idempotentHint: true });
  });
});

describe("the tools, as their REST twins", () => {
  test("send_message returns the stored record; get_history reads the conversation", async () => {
    const client = await mcp();
    const phone = newPhone();
    const first = await use<MessageRecord>(client, "send_message", { phone, message: "Hello from an agent" });
    expect(first).toMatchObject({ phone, message: "Hello from an agent", direction: "outbound", status: "delivered", reply_to: null, media: [], reactions: [] });
    expectTimestamp(first.timestamp);
    const second = await use<MessageRecord>(client, "send_message", { phone, message: "And a reply to it", reply_to: first.id });
    expect(second.reply_to).toBe(first.id);
    const page = await use<{ messages: MessageRecord[]; total: number; limit: number }>(client, "get_history", { phone, limit: 1 });
    expect(page.total).toBe(2);
    expect(page.messages.map((m) => m.id)).toEqual([second.id]);
    // The same records as REST's.
    expect((await history(server, phone)).messages.map((m) => m.id)).toEqual([second.id, first.id]);
    expect((await use<{ messages: MessageRecord[] }>(client, "get_history", { phone })).messages).toEqual((await history(server, phone)).messages);
  });

  test("poll_inbound: next_since as the next since brings each inbound message once", async () => {
    const client = await mcp();
    const phone = newPhone();
    const a = await inbound(server, phone, "first");
    const b = await inbound(server, phone, "second");
    const page = await use<{ messages: MessageRecord[]; has_more: boolean; next_since: string }>(client, "poll_inbound", { phone });
    expect(page.messages.map((m) => m.id)).toEqual([a.message_id, b.message_id]);
    expect(page.has_more).toBe(false);
    expect(page.next_since).toBe(b.timestamp);
    const empty = await use<{ messages: MessageRecord[]; has_more: boolean; next_since: string }>(client, "poll_inbound", { phone, since: page.next_since });
    expect(empty).toEqual({ messages: [], has_more: false, next_since: page.next_since });
    const c = await inbound(server, phone, "third");
    const next = await use<{ messages: MessageRecord[]; next_since: string }>(client, "poll_inbound", { phone, since: empty.next_since, limit: 10 });
    expect(next.messages.map((m) => m.id)).toEqual([c.message_id]);
    expect(next.next_since).toBe(c.timestamp);
    const firstOnly = await use<{ messages: MessageRecord[]; has_more: boolean }>(client, "poll_inbound", { phone, limit: 1 });
    expect(firstOnly.messages.map((m) => m.id)).toEqual([a.message_id]);
    expect(firstOnly.has_more).toBe(true);
  });

  test("list_conversations, get_contact and react", async () => {
    const client = await mcp();
    const phone = newPhone();
    await use(client, "send_message", { phone, message: "Are you coming?" });
    const theirs = await inbound(server, phone, "Yes, at 8", `net-${phone}`);
    const { conversations } = await use<{ conversations: { phone: string; last_message: MessageRecord; unread: number }[] }>(client, "list_conversations", {
      query: phone.slice(-7),
    });
    expect(conversations).toHaveLength(1);
    expect(conversations[0]).toMatchObject({ phone, unread: 1, last_message: { id: theirs.message_id, direction: "inbound" } });
    expect(await use(client, "get_contact", { phone })).toMatchObject({ phone, opted_out: false, opted_out_at: null, unread: 1, typing: false });
    const reacted = await use<MessageRecord & { reactions: { reaction: string; direction: string }[] }>(client, "react", { message_id: theirs.message_id, reaction: "love" });
    expect(reacted.id).toBe(theirs.message_id);
    expect(reacted.reactions).toEqual([expect.objectContaining({ reaction: "love", direction: "outbound", phone: null })]);
    expect(await refusal(client, "react", { message_id: "no-such-message", reaction: "like" })).toBe("message no-such-message not found");
  });

  test("cancel_scheduled takes back a message sent with send_at; a second cancel is refused", async () => {
    const client = await mcp();
    const phone = newPhone();
    const scheduled = await use<MessageRecord & { send_at: string }>(client, "send_message", { phone, message: "Later", send_at: inAnHour() });
    expect(scheduled.status).toBe("scheduled");
    expectTimestamp(scheduled.send_at);
    const canceled = await use<MessageRecord>(client, "cancel_scheduled", { message_id: scheduled.id });
    expect(canceled).toMatchObject({ id: scheduled.id, status: "canceled" });
    expect(await refusal(client, "cancel_scheduled", { message_id: scheduled.id })).toBe(`message ${scheduled.id} is canceled; only a scheduled message can be canceled`);
  });

  test("generate_reply without context gives the model the contact's messages; auto_send sends the reply", async () => {
    const client = await mcp();
    const phone = newPhone();
    await inbound(server, phone, "Hi, are you open tomorrow?");
    await use(client, "send_message", { phone, message: "Yes, from 9." });
    await inbound(server, phone, "Until when?");
    model.reply({ kind: "text", text: "Until 6 pm." });
    const before = model.requests.length;
    const answer = await use<{ generated_message: string; sent: boolean; message_id: string }>(client, "generate_reply", { phone, instructions: "Be brief.", auto_send: true });
    expect(answer).toMatchObject({ generated_message: "Until 6 pm.", sent: true });
    const [system, ...turns] = model.requests[before]!.messages;
    expect(system!.content).toContain("Be brief.");
    expect(turns).toEqual([
      { role: "user", content: "Hi, are you open tomorrow?" },
      { role: "assistant", content: "Yes, from 9." },
      { role: "user", content: "Until when?" },
    ]);
    const { messages } = await history(server, phone, "limit=1");
    expect(messages[0]).toMatchObject({ id: answer.message_id, message: "Until 6 pm.", direction: "outbound" });

    const withContext = await use<{ sent: boolean }>(client, "generate_reply", { phone, context: [{ role: "user", content: "Thanks!" }] });
    expect(withContext.sent).toBe(false);
    expect(model.requests.at(-1)!.messages.slice(1)).toEqual([{ role: "user", content: "Thanks!" }]);
    expect(await refusal(client, "generate_reply", { phone: newPhone() })).toEndWith("has no text messages to answer yet");
  });
});

describe("refusals are results with isError and the API's message", () => {
  test("send_message with chat_id sends into a group; the group's messages are not in poll_inbound", async () => {
    const client = await mcp();
    const [ann, bob] = [newPhone(), newPhone()];
    const chat = { id: `mcp-group-${Date.now()}`, name: "Agents", participants: [ann, bob] };
    expect((await call(server, "POST", "/webhooks/loopback", { body: { phone: ann, message: "hello group", chat } })).status).toBe(200);
    const groups = (await call<{ chats: { id: string; name: string | null }[] }>(server, "GET", "/api/chats?kind=group")).body.chats;
    const group = groups.find((c) => c.name === "Agents")!;
    const sent = await use<MessageRecord & { chat_id: string }>(client, "send_message", { chat_id: group.id, message: "hi all", idempotency_key: `group-${group.id}` });
    expect(sent).toMatchObject({ chat_id: group.id, phone: null, message: "hi all", direction: "outbound" });
    const page = (await call<{ messages: { id: string }[] }>(server, "GET", `/api/chats/${group.id}/messages`)).body.messages;
    expect(page.map((m) => m.id)).toContain(sent.id);
    const polled = await use<{ messages: MessageRecord[] }>(client, "poll_inbound", { phone: ann });
    expect(polled.messages.map((m) => m.message)).not.toContain("hello group");
  });

  test("a bad argument names the field", async () => {
    const client = await mcp();
    expect(await refusal(client, "send_message", { phone: "4155550123", message: "hi" })).toBe("phone: must be E.164, e.g. +14155550123");
    expect(await refusal(client, "send_message", { phone: newPhone() })).toBe("message: is required");
    expect(await refusal(client, "send_message", { phone: newPhone(), message: "hi", media_urls: ["ftp://example.com/a.jpg"] })).toStartWith("media_urls.0.url: must be an absolute https URL");
    expect(await refusal(client, "send_message", { phone: newPhone(), message: "hi", send_at: "2020-01-01T00:00:00Z" })).toStartWith("send_at: ");
    expect(await refusal(client, "get_history", { phone: newPhone(), limit: 0 })).toBe("limit: must be at least 1");
    expect(await refusal(client, "poll_inbound", { since: "yesterday" })).toStartWith("since: must be an ISO 8601 date-time");
    expect(await refusal(client, "react", { message_id: "x", reaction: "hug" })).toStartWith("reaction: must be one of love, like");
    expect(await refusal(client, "send_message", { message: "hi" })).toBe("phone: is required (or chat_id: exactly one of the two)");
    expect(await refusal(client, "send_message", { phone: newPhone(), chat_id: "grp_x", message: "hi" })).toBe("chat_id: cannot be given with phone: give exactly one of phone and chat_id");
    // The session goes on.
    expect((await client.listTools()).tools).toHaveLength(9);
  });

  test("a contact that replied STOP is not texted, and nothing is stored", async () => {
    const client = await mcp();
    const phone = newPhone();
    await inbound(server, phone, "STOP");
    expect(await use(client, "get_contact", { phone })).toMatchObject({ opted_out: true });
    expect(await refusal(client, "send_message", { phone, message: "One more offer" })).toBe("phone: the contact opted out by replying STOP");
    expect(await refusal(client, "generate_reply", { phone, auto_send: true })).toBe("phone: the contact opted out by replying STOP");
    expect((await history(server, phone)).total).toBe(1);
  });

  test("a network that refuses the recipient: its reason, and the message stays failed", async () => {
    const client = await limitedClient();
    const phone = newPhone();
    twilio.reply({ kind: "error", httpStatus: 400, code: 21211, message: "The 'To' number is not a valid phone number." });
    try {
      expect(await refusal(client, "send_message", { phone, message: "Hi" })).toContain("The 'To' number is not a valid phone number.");
    } finally {
      twilio.reply({ kind: "created" });
    }
    expect((await history(limited, phone)).messages[0]).toMatchObject({ status: "failed" });
  });
});

describe("the same idempotency_key twice sends once", () => {
  test("same arguments: the network gets one send and both calls return the same message; other arguments are refused", async () => {
    const client = await limitedClient();
    const phone = newPhone();
    const args = { phone, message: "Your order shipped", idempotency_key: `order-${phone}` };
    const first = await use<MessageRecord>(client, "send_message", args);
    const again = await use<MessageRecord>(client, "send_message", args);
    expect(again.id).toBe(first.id);
    expect(twilio.sends.filter((s) => s.body.To === phone)).toHaveLength(1);
    expect(await refusal(client, "send_message", { ...args, message: "Something else" })).toBe("idempotency-key: already used with a different request; use a new key");
    expect(twilio.sends.filter((s) => s.body.To === phone)).toHaveLength(1);
    expect((await history(limited, phone)).total).toBe(1);
  });
});

describe("HTTP: keys, rate limits, Origin, methods", () => {
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
  const post = (target: Server, headers: Record<string, string>, key?: string | null) =>
    call<{ success: boolean; error: { code: string; message: string } }>(target, "POST", "/mcp", {
      body: initialize,
      headers: { accept: "application/json, text/event-stream", ...headers },
      ...(key === undefined ? {} : { key }),
    });

  test("no key or a wrong one: 401 in the error envelope, with WWW-Authenticate", async () => {
    const none = await post(server, {}, null);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toStartWith("Bearer");
    expect(none.body.error).toMatchObject({ code: "UNAUTHORIZED", message: "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'" });
    const wrong = await post(server, {}, newApiKey());
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.message).toBe("authorization: invalid API key");
    const client = new Client({ name: "no-key", version: "1" });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))).rejects.toThrow();
  });

  test("the Basic scheme: the 401 says it must be Bearer", async () => {
    const basic = await post(server, { authorization: `Basic ${btoa(`${server.apiKey}:`)}` });
    expect(basic.status).toBe(401);
    expect(basic.body.error.message).toBe("authorization: the scheme must be Bearer, not Basic: 'Authorization: Bearer <API_KEY>'");
  });

  test("broken JSON is JSON-RPC's -32700 parse error, as an invalid JSON-RPC message is", async () => {
    const headers = { accept: "application/json, text/event-stream", "content-type": "application/json" };
    const broken = await call(server, "POST", "/mcp", { raw: '{"jsonrpc":"2.0","id":1,', headers });
    expect(broken.status).toBe(400);
    expect(broken.body).toEqual({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: body: malformed JSON" }, id: null });
    const notJsonRpc = await call(server, "POST", "/mcp", { raw: '{"hello":1}', headers });
    expect(notJsonRpc.status).toBe(400);
    expect(notJsonRpc.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 }, id: null });
    const notJson = await call(server, "POST", "/mcp", { raw: "hello", headers: { ...headers, "content-type": "text/plain" } });
    expect(notJson.status).toBe(415);
    const { error } = notJson.body as { error: { code: number; message: string } };
    expect([error.code, error.message.startsWith("content-type: must be application/json")]).toEqual([-32000, true]);
  });

  test("tools/call with params that are not { name, arguments }: -32602 invalid params, one sentence", async () => {
    const cases: [unknown, string][] = [
      [{ arguments: {} }, "Invalid params: params.name must be the name of a tool, a string (tools/list names them)"],
      [{ name: 7 }, "Invalid params: params.name must be the name of a tool, a string (tools/list names them)"],
      [{ name: "get_contact", arguments: [] }, "Invalid params: params.arguments must be an object of the tool's arguments"],
      [undefined, "Invalid params: tools/call takes params { name, arguments }, an object"],
    ];
    for (const [params, message] of cases) {
      const body = { jsonrpc: "2.0", id: 9, method: "tools/call", ...(params === undefined ? {} : { params }) };
      const reply = await call(server, "POST", "/mcp", { body, headers: { accept: "application/json, text/event-stream" } });
      expect([params, reply.status, reply.body]).toEqual([params, 200, { jsonrpc: "2.0", id: 9, error: { code: -32602, message } }]);
    }
    const unknown = await call(server, "POST", "/mcp", { body: { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "nope" } }, headers: { accept: "application/json, text/event-stream" } });
    expect(unknown.body).toEqual({ jsonrpc: "2.0", id: 3, error: { code: -32602, message: "MCP error -32602: Tool nope not found" } });
  });

  test("a browser Origin not in MCP_ALLOWED_ORIGINS: 403; a listed one works", async () => {
    const foreign = await post(server, { origin: "http://evil.example.test" });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error).toMatchObject({ code: "FORBIDDEN", message: "origin: http://evil.example.test is not allowed to call /mcp; list it in MCP_ALLOWED_ORIGINS" });
    const withoutKey = await post(server, { origin: "http://evil.example.test" }, null);
    expect(withoutKey.status).toBe(403);
    const allowed = await connect(server, { headers: { Origin: ALLOWED_ORIGIN } });
    expect((await allowed.listTools()).tools).toHaveLength(9);
  });

  test("stateless: no session id; GET and DELETE are 405 with Allow: POST", async () => {
    const res = await post(server, {});
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect(JSON.parse(res.text)).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "textwire" }, capabilities: { tools: {} } } });
    for (const method of ["GET", "DELETE"]) {
      const refused = await call(server, method, "/mcp", { headers: { accept: "text/event-stream" } });
      expect(refused.status).toBe(405);
      expect(refused.headers.get("allow")).toBe("POST");
    }
  });

  test("each message takes a token of the key's bucket; a tool call over the limit is a result with isError", async () => {
    // 12 tokens: connecting takes 2 (initialize, initialized), then each call to the API one.
    const client = await connect(limited, { key: otherKey });
    const phone = newPhone();
    let refused: string | undefined;
    let calls = 0;
    while (refused === undefined && calls < 20) {
      const result = (await client.callTool({ name: "get_contact", arguments: { phone } })) as CallToolResult;
      calls++;
      if (result.isError) refused = (result.content[0] as { text: string }).text;
    }
    expect(calls).toBe(11);
    expect(refused).toMatch(/^rate limit exceeded; retry in \d+ s$/);
    // Anything but a tool call over the limit is the API's 429.
    const listed = await call(limited, "POST", "/mcp", { body: initialize, headers: { accept: "application/json, text/event-stream" }, key: otherKey });
    expect(listed.status).toBe(429);
    expect(Number(listed.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });
});

describe("stdio: bun run textwire mcp", () => {
  /** An SDK client that spawns the CLI against `target` (or a URL). */
  async function stdio(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
    const transport = new StdioClientTransport({ command: "bun", args: ["src/cli.ts", "mcp"], cwd: ROOT, env, stderr: "pipe" });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: "textwire-e2e-stdio", version: "1.0.0" });
    await client.connect(transport);
    clients.push(client);
    return { client, stderr: () => stderr };
  }

  test("the same tools against TEXTWIRE_URL: list, send, read history, a refusal", async () => {
    const { client, stderr } = await stdio({ TEXTWIRE_URL: server.url, TEXTWIRE_API_KEY: server.apiKey });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    expect(tools).toEqual((await (await mcp()).listTools()).tools);
    const phone = newPhone();
    const sent = await use<MessageRecord>(client, "send_message", { phone, message: "Over stdio", idempotency_key: `stdio-${phone}` });
    expect(sent).toMatchObject({ phone, message: "Over stdio", status: "delivered" });
    expect((await use<MessageRecord>(client, "send_message", { phone, message: "Over stdio", idempotency_key: `stdio-${phone}` })).id).toBe(sent.id);
    const page = await use<{ messages: MessageRecord[]; total: number }>(client, "get_history", { phone });
    expect(page.total).toBe(1);
    expect(page.messages[0]!.id).toBe(sent.id);
    expect(await refusal(client, "send_message", { phone: "+1", message: "hi" })).toBe("phone: must be E.164, e.g. +14155550123");
    const stopped = newPhone();
    await inbound(server, stopped, "STOP");
    expect(await refusal(client, "send_message", { phone: stopped, message: "hi" })).toBe("phone: the contact opted out by replying STOP");
    expect(await refusal(client, "cancel_scheduled", { message_id: "nope" })).toBe("message nope not found");
    expect(stderr()).toContain("serving MCP over stdio");
  });

  test("a server that cannot be reached: a refusal naming TEXTWIRE_URL; a wrong key: the API's 401 message", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const url = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    const { client } = await stdio({ TEXTWIRE_URL: url, TEXTWIRE_API_KEY: newApiKey() });
    expect(await refusal(client, "get_contact", { phone: newPhone() })).toStartWith(`TEXTWIRE_URL: ${url} could not be reached`);
    const { client: wrongKey } = await stdio({ TEXTWIRE_URL: server.url, TEXTWIRE_API_KEY: newApiKey() });
    expect(await refusal(wrongKey, "get_contact", { phone: newPhone() })).toBe("authorization: invalid API key");
  });

  test("without TEXTWIRE_URL or TEXTWIRE_API_KEY: one line on stderr, exit 2, nothing on stdout", async () => {
    const result = await runCli(["mcp"], { TEXTWIRE_URL: undefined, TEXTWIRE_API_KEY: undefined });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim()).toBe("textwire: mcp needs TEXTWIRE_URL and TEXTWIRE_API_KEY: the Textwire server (e.g. http://127.0.0.1:3000) and an API key for it (see: bun run textwire help)");
  });
});
