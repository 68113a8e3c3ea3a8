// One router, two faces (CONTRACT §3 "tRPC, OpenAPI, docs"): the typed tRPC client at
// /trpc reaches the same procedures, data, validation and auth as the REST routes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TRPCClientError } from "@trpc/client";
import { createClient } from "../../src/client";
import { expectRecord, expectSendResult, history, inbound, newPhone, poll, send } from "./api";
import { newApiKey, startServer, type Server } from "./harness";

let server: Server;
let client: ReturnType<typeof createClient>;
beforeAll(async () => {
  server = await startServer();
  client = createClient({ url: server.url, apiKey: server.apiKey });
}, 60_000);
afterAll(() => server?.kill());

/** The tRPC error a call fails with; fails the test if the call succeeds. */
async function failure(promise: Promise<unknown>): Promise<{ code: unknown; message: string }> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(TRPCClientError);
    const e = err as { data?: { code?: unknown }; message: string };
    return { code: e.data?.code, message: e.message };
  }
  throw new Error("expected the call to fail");
}

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
