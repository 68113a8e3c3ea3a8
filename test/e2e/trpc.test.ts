// One router, two faces (docs/api.md "tRPC, OpenAPI, docs"): the typed tRPC client at
// /trpc reaches the same procedures, data, validation and auth as the REST routes.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createClient, type AppRouter } from "../../src/client";
import { call, expectRecord, expectSendResult, history, inbound, newPhone, poll, send, trpcFailure as failure } from "./api";
import { newApiKey, startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
let client: ReturnType<typeof createClient>;
beforeAll(async () => {
  server = await startServer();
  client = createClient({ url: server.url, apiKey: server.apiKey });
}, 60_000);
afterAll(() => server?.kill());


describe("the same data through both faces", () => {
  test("messages.send stores an outbound, delivered message that REST history shows", async () => {
    const phone = newPhone();
    const result = await client.messages.send.mutate({ phone, message: "via tRPC" });
    expectSendResult(result);
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: result.message_id, phone, message: "via tRPC", direction: "outbound", status: "delivered", timestamp: result.timestamp });
  });

  test("messages.history returns what REST returns, newest first", async () => {
    const phone = newPhone();
    const first = await send(server, phone, "one");
    const second = await inbound(server, phone, "two");
    const third = await client.messages.send.mutate({ phone, message: "three" });
    const viaTrpc = await client.messages.history.query({ phone, limit: 2, offset: 0 });
    const viaRest = await history(server, phone, "limit=2&offset=0");
    expect(viaTrpc as unknown).toEqual(viaRest);
    expect(viaTrpc.total).toBe(3);
    expect(viaTrpc.limit).toBe(2);
    expect(viaTrpc.messages.map((m) => m.id)).toEqual([third.message_id, second.message_id]);
    const all = await client.messages.history.query({ phone });
    expect(all.messages.map((m) => m.id)).toEqual([third.message_id, second.message_id, first.message_id]);
    expect(all).toMatchObject({ limit: 50, offset: 0 });
  });

  test("messages.poll returns what REST returns: inbound only, oldest first, after since", async () => {
    const phone = newPhone();
    const a = await inbound(server, phone, "a");
    await send(server, phone, "reply");
    const b = await inbound(server, phone, "b");
    const c = await inbound(server, phone, "c");
    const viaTrpc = await client.messages.poll.query({ phone, since: a.timestamp });
    expect(viaTrpc.messages.map((m) => m.id)).toEqual([b.message_id, c.message_id]);
    expect(viaTrpc).toMatchObject({ count: 2, has_more: false });
    expect(viaTrpc as unknown).toEqual(await poll(server, { phone, since: a.timestamp }));
    const limited = await client.messages.poll.query({ phone, limit: 1 });
    expect(limited).toMatchObject({ count: 1, has_more: true });
    expect(limited.messages[0]!.id).toBe(a.message_id);
  });
});

describe("the same validation and auth", () => {
  test("a malformed phone: BAD_REQUEST naming phone, nothing stored", async () => {
    const e = await failure(client.messages.send.mutate({ phone: "+1 415 555 0123", message: "hi" }));
    expect(e).toMatchObject({ code: "BAD_REQUEST" });
    expect(e.message.toLowerCase()).toContain("phone");
  });

  test("a control character: BAD_REQUEST naming message", async () => {
    const phone = newPhone();
    const e = await failure(client.messages.send.mutate({ phone, message: "bell\u0007" }));
    expect(e).toMatchObject({ code: "BAD_REQUEST" });
    expect(e.message.toLowerCase()).toContain("message");
    expect((await history(server, phone)).total).toBe(0);
  });

  test("a whitespace-only message: BAD_REQUEST naming message", async () => {
    const e = await failure(client.messages.send.mutate({ phone: newPhone(), message: " \n\t " }));
    expect(e).toMatchObject({ code: "BAD_REQUEST" });
    expect(e.message.toLowerCase()).toContain("message");
  });

  test("history limit 0: BAD_REQUEST naming limit", async () => {
    const e = await failure(client.messages.history.query({ phone: newPhone(), limit: 0 }));
    expect(e).toMatchObject({ code: "BAD_REQUEST" });
    expect(e.message.toLowerCase()).toContain("limit");
  });

  test("history offset -1: BAD_REQUEST naming offset", async () => {
    const e = await failure(client.messages.history.query({ phone: newPhone(), offset: -1 }));
    expect(e).toMatchObject({ code: "BAD_REQUEST" });
    expect(e.message.toLowerCase()).toContain("offset");
  });

  test("an unparseable since: BAD_REQUEST naming since", async () => {
    const e = await failure(client.messages.poll.query({ since: "not a time" }));
    expect(e).toMatchObject({ code: "BAD_REQUEST" });
    expect(e.message.toLowerCase()).toContain("since");
  });

  test("a wrong key: UNAUTHORIZED, and nothing is sent", async () => {
    const phone = newPhone();
    const intruder = createClient({ url: server.url, apiKey: newApiKey() });
    const e = await failure(intruder.messages.send.mutate({ phone, message: "let me in" }));
    expect(e).toMatchObject({ code: "UNAUTHORIZED" });
    expect(e.message).not.toContain(server.apiKey);
    expect((await history(server, phone)).total).toBe(0);
  });
});

describe("the same rate limit", () => {
  test("with RATE_LIMIT_BURST=2 the third tRPC call is TOO_MANY_REQUESTS", async () => {
    const limited = await startServer({ env: { RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "2" } });
    try {
      const c = createClient({ url: limited.url, apiKey: limited.apiKey });
      await c.messages.poll.query({});
      await c.messages.poll.query({});
      const e = await failure(c.messages.poll.query({}));
      expect(e).toMatchObject({ code: "TOO_MANY_REQUESTS" });
    } finally {
      limited.kill();
    }
  });
});

describe("a batch takes one rate-limit token per call (RATE_LIMIT_BURST=3)", () => {
  let limited: Server;
  const checker = newApiKey();
  beforeAll(async () => {
    const key = newApiKey();
    limited = await startServer({ apiKey: key, env: { API_KEYS: `${key},${checker}`, RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "3" } });
  }, 60_000);
  afterAll(() => limited?.kill());

  /** The real tRPC batch client; it keeps the last response's headers. */
  function batchClient() {
    const seen: { status?: number; headers?: Headers } = {};
    const client = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: `${limited.url}/trpc`,
          headers: { Authorization: `Bearer ${limited.apiKey}` },
          fetch: async (url, init) => {
            const res = await fetch(url, init as RequestInit);
            seen.status = res.status;
            seen.headers = res.headers;
            return res;
          },
        }),
      ],
    });
    return { client, seen };
  }

  // One phone for every send, so one history call (of the checker's own 3) counts them.
  const phone = newPhone();
  const stored = async () => (await call<{ total: number }>(limited, "GET", `/api/messages/${encodeURIComponent(phone)}`, { key: checker })).body.total;

  test("a batch of 5 sends is 429 as a whole: nothing stored, Retry-After and RateLimit headers; a batch of 3 then passes, the next call is refused", async () => {
    const { client, seen } = batchClient();
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => client.messages.send.mutate({ phone, message: "batched" })));
    expect(seen.status).toBe(429);
    for (const r of results) {
      expect(r.status).toBe("rejected");
      expect(((r as PromiseRejectedResult).reason as { data?: { code?: string } }).data?.code).toBe("TOO_MANY_REQUESTS");
    }
    expect(Number(seen.headers?.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(seen.headers?.get("ratelimit-limit")).toBe("3");
    expect(seen.headers?.get("ratelimit-remaining")).toBe("3");
    expect(seen.headers?.get("ratelimit-reset") ?? "").toMatch(/^\d+$/);
    expect(await stored()).toBe(0);

    // The refused batch took nothing: exactly the burst fits.
    const sent = await Promise.all(Array.from({ length: 3 }, () => client.messages.send.mutate({ phone, message: "batched" })));
    expect(seen.status).toBe(200);
    expect(sent.every((r) => r.success)).toBe(true);
    expect(seen.headers?.get("ratelimit-remaining")).toBe("0");
    expect(await stored()).toBe(3);
    const e = await failure(client.messages.send.mutate({ phone, message: "one more" }));
    expect(e).toMatchObject({ code: "TOO_MANY_REQUESTS" });
    expect(await stored()).toBe(3);
  });
});
