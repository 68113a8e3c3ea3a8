import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { AppError } from "../../src/errors";
import { beginIdempotent, checkIdempotencyKey, fingerprint, IDEMPOTENCY_TTL_MS, runIdempotent } from "../../src/messages/idempotency";
import { sendAnswer } from "../../src/messages/records";
import { sendAnswered, sendMessage, type MessagingDeps } from "../../src/messages/service";
import type { NetworkDriver } from "../../src/network/driver";
import { clockDialects, dialects, quietLog, rejectionOf, storages, TEXT_ONLY, type TestDialect, oneLine } from "./helpers";

// Some tests wait on real time and a real database.
setDefaultTimeout(30_000);
/** A lock long enough that the steps between taking it and checking it never outlast it, even on a loaded machine. */
const LOCK_MS = 1_500;

/** A network that takes messages, refuses them, or holds them until released. */
function controllableNetwork() {
  let mode: "ok" | "refuse" | "hold" = "ok";
  const sent: string[] = [];
  const held: (() => void)[] = [];
  const driver: NetworkDriver = {
    name: "test",
    capabilities: TEXT_ONLY,
    async send(m) {
      if (mode === "refuse") throw new Error("number unreachable");
      if (mode === "hold") await new Promise<void>((r) => held.push(r));
      sent.push(m.text);
      return { status: "delivered" };
    },
  };
  return { driver, sent, held, set: (m: typeof mode) => (mode = m) };
}

/**
 * Fresh storages with a network under the test's control; on a clock the test moves (ms)
 * where the dialect has one, unless `realTime`.
 */
function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async (opts: { realTime?: boolean } = {}) => {
    let t = 1_800_000_000_000;
    const clock = { now: () => t, advance: (ms: number) => (t += ms) };
    const storage = await fresh(dialect.movableClock && !opts.realTime ? { clock: () => clock.now() * 1000 } : {});
    const net = controllableNetwork();
    const deps: MessagingDeps = { storage, lines: oneLine(net.driver), log: quietLog };
    const send = (key: string, message: string) =>
      runIdempotent(storage, { scope: "key:a", key }, fingerprint("send", { phone: "+14155550123", message }), 60_000, (claim) =>
        sendAnswered(deps, { phone: "+14155550123", message }, claim),
      quietLog);
    const begin = (claim: { scope: string; key: string }, print: string, lockMs: number) => beginIdempotent(storage, claim, print, lockMs);
    return { storage, deps, net, clock, send, begin };
  };
}

const conflict = (p: Promise<unknown>) => p.then(() => null, (e: AppError) => e.code);
const taken = async (p: Promise<object>) => "claim" in (await p);

describe.each(dialects)("idempotency keys on $name", (dialect) => {
  const setup = setups(dialect);

  test("a replay answers the first response and sends nothing", async () => {
    const { send, net } = await setup();
    const first = await send("k1", "hello");
    const again = await send("k1", "hello");
    expect(first.replayed).toBe(false);
    expect(again).toEqual({ answer: first.answer, replayed: true });
    expect(net.sent).toEqual(["hello"]);
  });

  test("the same key with another body is a CONFLICT", async () => {
    const { send } = await setup();
    await send("k1", "hello");
    expect(await conflict(send("k1", "other"))).toBe("CONFLICT");
  });

  test("keys are scoped: another scope may use the same key", async () => {
    const { begin } = await setup();
    const print = fingerprint("send", {});
    expect(await taken(begin({ scope: "key:a", key: "k" }, print, 1000))).toBe(true);
    expect(await taken(begin({ scope: "key:b", key: "k" }, print, 1000))).toBe(true);
  });

  test("a failed send is not remembered: a retry really sends", async () => {
    const { send, net, storage } = await setup();
    net.set("refuse");
    expect(await conflict(send("k1", "hello"))).toBe("BAD_GATEWAY");
    net.set("ok");
    const retry = await send("k1", "hello");
    expect(retry.replayed).toBe(false);
    expect(net.sent).toEqual(["hello"]);
    expect((await storage.messages.history("+14155550123", 10, 0)).rows.map((r) => r.status).sort()).toEqual(["delivered", "failed"]);
  });

  test("while the first request runs, the same key gets a CONFLICT and nothing is sent twice", async () => {
    const { send, net } = await setup();
    net.set("hold");
    const first = send("k1", "hello");
    while (net.held.length === 0) await Bun.sleep(1);
    expect(await conflict(send("k1", "hello"))).toBe("CONFLICT");
    net.held.forEach((release) => release());
    await first;
    expect(net.sent).toEqual(["hello"]);
  });

  test("the same key begun many times at once is taken once", async () => {
    const { begin } = await setup();
    const claim = { scope: "key:a", key: "k1" };
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => begin(claim, "p", 60_000)));
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === "rejected").map((o) => ((o as PromiseRejectedResult).reason as AppError).code)).toEqual(Array(7).fill("CONFLICT"));
  });

  test("a request that died after the network took its message replays the answer", async () => {
    const { deps, begin } = await setup();
    const claim = { scope: "key:a", key: "k1" };
    await begin(claim, "p", 1000);
    const sent = await sendMessage(deps, { phone: "+14155550123", message: "hi" }, { claim });
    // No markDone: the process stopped right after the network answered.
    expect(await begin(claim, "p", 1000)).toEqual({ replay: sendAnswer(sent) });
  });

  test("a scheduled send is answered once stored: a request that died before remembering it replays it, even after the message went out", async () => {
    const { storage, deps, net, begin } = await setup({ realTime: true });
    const claim = { scope: "key:a", key: "k1" };
    await begin(claim, "p", 1000);
    const sendAt = (Date.now() + 60_000) * 1000;
    const scheduled = await sendMessage(deps, { phone: "+14155550123", message: "later", send_at: sendAt }, { claim });
    expect(net.sent).toEqual([]);
    // No markDone: the process stopped right after storing it; then the message was claimed.
    expect(await storage.messages.setStatus(scheduled.id, "queued")).toBe(true);
    expect(await begin(claim, "p", 1000)).toEqual({ replay: { ...sendAnswer(scheduled), status: "scheduled" } });
    // Now remembered: answered again without a look at the message.
    expect(await begin(claim, "p", 1000)).toEqual({ replay: { ...sendAnswer(scheduled), status: "scheduled" } });
  });

  test("a request that died before storing anything is taken over once its lock expires", async () => {
    const { begin } = await setup({ realTime: true });
    const claim = { scope: "key:a", key: "k1" };
    await begin(claim, "p", LOCK_MS);
    expect(await rejectionOf(begin(claim, "p", LOCK_MS))).toBeInstanceOf(AppError);
    await Bun.sleep(LOCK_MS + 100);
    expect(await taken(begin(claim, "p", LOCK_MS))).toBe(true);
  });

  test("a request whose message was left queued is in progress while locked, then answered as an unknown outcome (504, never sent again) until the message is failed", async () => {
    const { storage, begin } = await setup({ realTime: true });
    const claim = { scope: "key:a", key: "k1" };
    await begin(claim, "p", LOCK_MS);
    await storage.transaction(async (tx) => {
      await tx.messages.insert({ id: "m1", phone: "+14155550123", body: "hi", direction: "outbound", status: "queued", network: "test", networkId: null });
      await tx.idempotency.attach(claim, "m1", JSON.stringify({ id: "m1" }));
    });
    expect(String(await rejectionOf(begin(claim, "p", LOCK_MS)))).toContain("in progress");
    await Bun.sleep(LOCK_MS + 100);
    const unknown = await rejectionOf(begin(claim, "p", LOCK_MS));
    expect(unknown).toBeInstanceOf(AppError);
    expect((unknown as AppError).code).toBe("GATEWAY_TIMEOUT");
    expect((unknown as AppError).details.message_id).toBe("m1");
    expect(await storage.messages.failStaleQueued(300, "interrupted", [])).toHaveLength(1);
    expect((await storage.messages.get("m1"))?.status).toBe("failed");
    expect(await taken(begin(claim, "p", 300))).toBe(true);
  });
});

describe.each(clockDialects)("idempotency keys on $name, on a clock the test moves", (dialect) => {
  const setup = setups(dialect);

  test("after 24 hours a key is forgotten and purged", async () => {
    const { send, net, clock, storage } = await setup();
    await send("k1", "hello");
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    expect(await storage.retention.purge("idempotency_keys", IDEMPOTENCY_TTL_MS, 10)).toBe(1);
    expect((await send("k1", "hello")).replayed).toBe(false);
    expect(net.sent).toEqual(["hello", "hello"]);
  });

  test("a key past 24 hours but not yet purged starts over, even with another request", async () => {
    const { send, net, clock } = await setup();
    await send("k1", "hello");
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    expect((await send("k1", "other")).replayed).toBe(false);
    expect(net.sent).toEqual(["hello", "other"]);
  });
});

test("keys must be 1 to 255 printable characters", () => {
  expect(checkIdempotencyKey("order-42 retry")).toBe("order-42 retry");
  for (const bad of ["", "x".repeat(256), "tab\there", "é"]) {
    expect(() => checkIdempotencyKey(bad)).toThrow("idempotency-key");
  }
});
