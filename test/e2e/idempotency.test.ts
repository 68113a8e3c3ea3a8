// Idempotency-Key on POST /api/send (docs/api.md), over HTTP and across a restart.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { TRPCClientError } from "@trpc/client";
import { createClient, type ResponseInfo } from "../../src/client";
import { call, expectBadField, expectError, history, newPhone, type SendResult } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

const sendWithKey = (key: string, body: unknown, target = server) =>
  call<SendResult>(target, "POST", "/api/send", { body, headers: { "Idempotency-Key": key } });

describe("Idempotency-Key on POST /api/send", () => {
  test("a retry answers the first response and sends nothing new", async () => {
    const phone = newPhone();
    const body = { phone, message: "Your order has shipped." };
    const first = await sendWithKey(`ship-${phone}`, body);
    const again = await sendWithKey(`ship-${phone}`, body);
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect((await history(server, phone)).total).toBe(1);
  });

  test("the same key with another body is 409 CONFLICT", async () => {
    const phone = newPhone();
    await sendWithKey(`k-${phone}`, { phone, message: "one" });
    const other = await sendWithKey(`k-${phone}`, { phone, message: "two" });
    expect(expectError(other, 409, "CONFLICT").error.message).toContain("idempotency-key");
    expect((await history(server, phone)).messages.map((m) => m.message)).toEqual(["one"]);
  });

  test("20 concurrent requests with one key store one message; each gets the answer or 409", async () => {
    const phone = newPhone();
    const body = { phone, message: "exactly once" };
    const replies = await Promise.all(Array.from({ length: 20 }, () => sendWithKey(`burst-${phone}`, body)));
    const ok = replies.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(replies.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    expect(new Set(ok.map((r) => r.body.message_id)).size).toBe(1);
    expect((await history(server, phone)).total).toBe(1);
  });

  test("keys are per API key: another key's request with the same Idempotency-Key sends", async () => {
    const phone = newPhone();
    const body = { phone, message: "per key" };
    await sendWithKey(`shared-${phone}`, body);
    const created = Bun.spawnSync(["bun", "run", "--silent", "textwire", "keys", "create", "--name", `other-${phone.slice(-4)}`], {
      cwd: `${import.meta.dir}/../..`,
      env: { ...process.env, DATABASE_URL: server.db.url },
    });
    const otherKey = created.stdout.toString().trim();
    expect(otherKey).toMatch(/^tw_/);
    const other = await call<SendResult>(server, "POST", "/api/send", {
      body,
      headers: { "Idempotency-Key": `shared-${phone}`, Authorization: `Bearer ${otherKey}` },
    });
    expect(other.status).toBe(200);
    expect((await history(server, phone)).total).toBe(2);
  });

  test.each([
    ["empty", ""],
    ["too long", "k".repeat(256)],
    ["non-printable", "tab\there"],
  ])("a %s key is 400 naming idempotency-key", async (_name, key) => {
    expectBadField(await sendWithKey(key, { phone: newPhone(), message: "x" }), "idempotency-key");
  });

  test("a bad body is not remembered: the key still works once the body is right", async () => {
    const phone = newPhone();
    expectBadField(await sendWithKey(`fix-${phone}`, { phone, message: "" }), "message");
    expect((await sendWithKey(`fix-${phone}`, { phone, message: "fixed" })).status).toBe(200);
  });

  test("the conflict says why, in the REST envelope and the tRPC error's data: reason and the first request's message", async () => {
    const phone = newPhone();
    const first = await sendWithKey(`why-${phone}`, { phone, message: "one" });
    const other = await sendWithKey(`why-${phone}`, { phone, message: "two" });
    const { error } = expectError(other, 409, "CONFLICT") as unknown as { error: Record<string, unknown> };
    expect({ reason: error.reason, message_id: error.message_id, timestamp: error.timestamp, status: error.status }).toEqual({
      reason: "IDEMPOTENCY_KEY_REUSED",
      message_id: first.body.message_id,
      timestamp: first.body.timestamp,
      status: "delivered",
    });
    const client = createClient({ url: server.url, apiKey: server.apiKey });
    const err = await client.messages.send.mutate({ phone, message: "three" }, { context: { idempotencyKey: `why-${phone}` } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TRPCClientError);
    const data = (err as TRPCClientError<never>).data as unknown as Record<string, unknown>;
    expect({ code: data.code, reason: data.reason, message_id: data.message_id }).toEqual({
      code: "CONFLICT",
      reason: "IDEMPOTENCY_KEY_REUSED",
      message_id: first.body.message_id,
    });
  });

  test("the send answer carries the message's status, and the typed client says whether it was a replay", async () => {
    const phone = newPhone();
    const client = createClient({ url: server.url, apiKey: server.apiKey });
    const responses: ResponseInfo[] = [{}, {}];
    const a = await client.messages.send.mutate({ phone, message: "typed" }, { context: { idempotencyKey: `replay-${phone}`, response: responses[0] } });
    const b = await client.messages.send.mutate({ phone, message: "typed" }, { context: { idempotencyKey: `replay-${phone}`, response: responses[1] } });
    expect(a.status).toBe("delivered");
    expect(b).toEqual(a);
    expect(responses.map((r) => r.replayed)).toEqual([false, true]);
  });

  test("the typed client carries the key from the call's context", async () => {
    const phone = newPhone();
    const client = createClient({ url: server.url, apiKey: server.apiKey });
    const opts = { context: { idempotencyKey: `trpc-${phone}` } };
    const a = await client.messages.send.mutate({ phone, message: "typed" }, opts);
    const b = await client.messages.send.mutate({ phone, message: "typed" }, opts);
    expect(b).toEqual(a);
    expect((await history(server, phone)).total).toBe(1);
  });

  test("keys survive a restart", async () => {
    const own = await startServer();
    const phone = newPhone();
    const body = { phone, message: "before restart" };
    const first = await sendWithKey(`restart-${phone}`, body, own);
    expect(await own.stop()).toBe(0);
    const again = await startServer({ db: own.db, apiKey: own.apiKey });
    try {
      const replay = await sendWithKey(`restart-${phone}`, body, again);
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(first.body);
      expect((await history(again, phone)).total).toBe(1);
    } finally {
      again.kill();
    }
  }, 30_000);
});
