// The MCP route in process (src/api/mcp.ts) on an in-memory database: what each JSON-RPC
// message costs, and which idempotency key a tool call carries. The protocol end to end,
// over both transports, is test/e2e/mcp.test.ts.
import { describe, expect, test } from "bun:test";
import { createHttpHandler } from "../../src/api/http";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { historyContext } from "../../src/generator/context";
import type { MessageRecord } from "../../src/messages/schemas";
import { dialects, quietLog, storages } from "./helpers";

const KEY = "tw_unit_aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const fresh = storages(dialects[0]!);

async function handler(env: Record<string, string> = {}) {
  const app = await createApp(loadConfig({ DATABASE_URL: ":memory:", API_KEYS: KEY, ...env }), await fresh(), quietLog);
  const http = createHttpHandler(app);
  let id = 0;
  /** POSTs JSON-RPC messages (a batch when more than one) to /mcp. */
  const post = (messages: { method: string; params?: unknown }[], headers: Record<string, string> = {}) => {
    const body = messages.map((m) => ({ jsonrpc: "2.0", id: ++id, ...m }));
    return http.fetch(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
          ...headers,
        },
        body: JSON.stringify(body.length === 1 ? body[0] : body),
      }),
      "127.0.0.1",
    );
  };
  return { app, post };
}

const sendCall = (message: string, extra: Record<string, unknown> = {}) => ({
  method: "tools/call",
  params: { name: "send_message", arguments: { phone: "+14155550123", message, ...extra } },
});

describe("rate limit: one token per JSON-RPC message", () => {
  test("a batch takes one a message; over the limit a tool call is a refused result, anything else the API's 429", async () => {
    const { post } = await handler({ RATE_LIMIT_BURST: "3", RATE_LIMIT_PER_MINUTE: "1" });
    const batch = await post([{ method: "ping" }, { method: "ping" }]);
    expect(batch.status).toBe(200);
    expect(batch.headers.get("ratelimit-remaining")).toBe("1");
    const read = await post([{ method: "tools/call", params: { name: "get_contact", arguments: { phone: "+14155550123" } } }]);
    expect(((await read.json()) as { result: { isError?: boolean } }).result.isError).toBeUndefined();
    expect(read.headers.get("ratelimit-remaining")).toBe("0");

    const refusedCall = await post([{ method: "tools/call", params: { name: "get_contact", arguments: { phone: "+14155550123" } } }]);
    expect(refusedCall.status).toBe(200);
    const { result } = (await refusedCall.json()) as { result: { isError: boolean; content: { text: string }[] } };
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toMatch(/^rate limit exceeded; retry in \d+ s$/);
    expect(Number(refusedCall.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    const refusedPing = await post([{ method: "ping" }]);
    expect(refusedPing.status).toBe(429);
    expect(await refusedPing.json()).toMatchObject({ success: false, error: { code: "TOO_MANY_REQUESTS" } });
  });
});

describe("idempotency keys", () => {
  test("only a tool's idempotency_key keys a send, never an Idempotency-Key header on the MCP request", async () => {
    const { app, post } = await handler();
    const header = { "idempotency-key": "same-header" };
    expect((await post([sendCall("first")], header)).status).toBe(200);
    expect((await post([sendCall("second")], header)).status).toBe(200);
    expect((await app.storage.messages.history("+14155550123", 10, 0)).total).toBe(2);

    const keyed = async (message: string) => {
      const res = await post([sendCall(message, { idempotency_key: "tool-key" })]);
      return ((await res.json()) as { result: { isError?: boolean; structuredContent?: { id: string }; content: { text: string }[] } }).result;
    };
    const first = await keyed("third");
    const again = await keyed("third");
    expect(again.structuredContent!.id).toBe(first.structuredContent!.id);
    expect((await app.storage.messages.history("+14155550123", 10, 0)).total).toBe(3);
    const other = await keyed("fourth");
    expect(other.isError).toBe(true);
    expect(other.content[0]!.text).toBe("idempotency-key: already used with a different request; use a new key");
  });
});

describe("historyContext", () => {
  const record = (direction: "inbound" | "outbound", message: string) => ({ direction, message }) as MessageRecord;

  test("history (newest first) becomes the generator's turns, oldest first; messages without text are left out", () => {
    const newestFirst = [record("inbound", "and now?"), record("outbound", " "), record("outbound", "yes"), record("inbound", ""), record("inbound", "open?")];
    expect(historyContext(newestFirst)).toEqual([
      { role: "user", content: "open?" },
      { role: "assistant", content: "yes" },
      { role: "user", content: "and now?" },
    ]);
    expect(newestFirst[0]!.message).toBe("and now?");
  });

  test("in a group each inbound turn names its sender; ours stay as they are", () => {
    const said = (direction: "inbound" | "outbound", phone: string | null, message: string) => ({ direction, phone, message }) as MessageRecord;
    expect(historyContext([said("outbound", null, "hi all"), said("inbound", "+14155550124", "textwire, dinner?"), said("inbound", "+14155550123", "")], { senders: true })).toEqual([
      { role: "user", content: "+14155550124: textwire, dinner?" },
      { role: "assistant", content: "hi all" },
    ]);
  });
});
