import { describe, expect, test } from "bun:test";
import { openDb } from "../../src/db/client";
import { AppError } from "../../src/errors";
import {
  checkIdempotencyKey,
  createIdempotencyStore,
  fingerprint,
  IDEMPOTENCY_TTL_MS,
  runIdempotent,
} from "../../src/messages/idempotency";
import { sendMessage, sentAnswer, type MessagingDeps } from "../../src/messages/service";
import { createMessageStore } from "../../src/messages/store";
import { thrownBy } from "./helpers";
import type { NetworkDriver } from "../../src/network/driver";
import { quietLog } from "./helpers";

/** A network that takes messages, refuses them, or holds them until released. */
function controllableNetwork() {
  let mode: "ok" | "refuse" | "hold" = "ok";
  const sent: string[] = [];
  const held: (() => void)[] = [];
  const driver: NetworkDriver = {
    name: "test",
    async send(m) {
      if (mode === "refuse") throw new Error("number unreachable");
      if (mode === "hold") await new Promise<void>((r) => held.push(r));
      sent.push(m.text);
      return { status: "delivered" };
    },
  };
  return { driver, sent, held, set: (m: typeof mode) => (mode = m) };
}

function setup() {
  let t = 1_800_000_000_000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  const db = openDb(":memory:");
  const net = controllableNetwork();
  const deps: MessagingDeps = {
    store: createMessageStore(db, () => clock.now() * 1000),
    idempotency: createIdempotencyStore(db, clock.now),
    network: net.driver,
    log: quietLog,
  };
  const send = (key: string, message: string) =>
    runIdempotent(deps.idempotency, { scope: "key:a", key }, fingerprint("send", { phone: "+14155550123", message }), 60_000, async (claim) =>
      sentAnswer(await sendMessage(deps, { phone: "+14155550123", message }, claim && { claim, answer: sentAnswer })),
    quietLog);
  return { db, deps, net, clock, send };
}

const conflict = (p: Promise<unknown>) => p.then(() => null, (e: AppError) => e.code);

describe("idempotency keys", () => {
  test("a replay answers the first response and sends nothing", async () => {
    const { send, net } = setup();
    const first = await send("k1", "hello");
    const again = await send("k1", "hello");
    expect(first.replayed).toBe(false);
    expect(again).toEqual({ answer: first.answer, replayed: true });
    expect(net.sent).toEqual(["hello"]);
  });

  test("the same key with another body is a CONFLICT", async () => {
    const { send } = setup();
    await send("k1", "hello");
    expect(await conflict(send("k1", "other"))).toBe("CONFLICT");
  });

  test("keys are scoped: another scope may use the same key", async () => {
    const { deps } = setup();
    const print = fingerprint("send", {});
    expect("claim" in deps.idempotency.begin({ scope: "key:a", key: "k" }, print, 1000)).toBe(true);
    expect("claim" in deps.idempotency.begin({ scope: "key:b", key: "k" }, print, 1000)).toBe(true);
  });

  test("a failed send is not remembered: a retry really sends", async () => {
    const { send, net, deps } = setup();
    net.set("refuse");
    expect(await conflict(send("k1", "hello"))).toBe("BAD_GATEWAY");
    net.set("ok");
    const retry = await send("k1", "hello");
    expect(retry.replayed).toBe(false);
    expect(net.sent).toEqual(["hello"]);
    expect(deps.store.history("+14155550123", 10, 0).rows.map((r) => r.status).sort()).toEqual(["delivered", "failed"]);
  });

  test("while the first request runs, the same key gets a CONFLICT and nothing is sent twice", async () => {
    const { send, net } = setup();
    net.set("hold");
    const first = send("k1", "hello");
    await Bun.sleep(1);
    expect(await conflict(send("k1", "hello"))).toBe("CONFLICT");
    net.held.forEach((release) => release());
    await first;
    expect(net.sent).toEqual(["hello"]);
  });

  test("after 24 hours a key is forgotten and purged", async () => {
    const { send, net, clock, deps } = setup();
    await send("k1", "hello");
    clock.advance(IDEMPOTENCY_TTL_MS + 1);
    expect(deps.idempotency.purgeExpired()).toBe(1);
    expect((await send("k1", "hello")).replayed).toBe(false);
    expect(net.sent).toEqual(["hello", "hello"]);
  });

  test("a request that died before storing anything is taken over once its lock expires", () => {
    const { deps, clock } = setup();
    const claim = { scope: "key:a", key: "k1" };
    deps.idempotency.begin(claim, "p", 1000);
    expect(() => deps.idempotency.begin(claim, "p", 1000)).toThrow(AppError);
    clock.advance(1001);
    expect("claim" in deps.idempotency.begin(claim, "p", 1000)).toBe(true);
  });

  test("a request that died after the network took its message replays the answer", async () => {
    const { deps } = setup();
    const claim = { scope: "key:a", key: "k1" };
    deps.idempotency.begin(claim, "p", 1000);
    const sent = await sendMessage(deps, { phone: "+14155550123", message: "hi" }, { claim, answer: sentAnswer });
    // No complete(): the process stopped right after the network answered.
    expect(deps.idempotency.begin(claim, "p", 1000)).toEqual({ replay: sentAnswer(sent) });
  });

  test("a request whose message was left queued is in progress while locked, then answered as an unknown outcome (504, never sent again) until the message is failed", () => {
    const { deps, clock } = setup();
    const claim = { scope: "key:a", key: "k1" };
    deps.idempotency.begin(claim, "p", 1000);
    deps.store.insert(
      { id: "m1", phone: "+14155550123", body: "hi", direction: "outbound", status: "queued", network: "test", networkId: null },
      (row) => deps.idempotency.attach(claim, row.id, { id: row.id }),
    );
    clock.advance(500);
    expect(() => deps.idempotency.begin(claim, "p", 1000)).toThrow("in progress");
    clock.advance(4500);
    const unknown = thrownBy(() => deps.idempotency.begin(claim, "p", 1000));
    expect(unknown).toBeInstanceOf(AppError);
    expect((unknown as AppError).code).toBe("GATEWAY_TIMEOUT");
    expect((unknown as AppError).details.message_id).toBe("m1");
    expect(deps.store.failStaleQueued(4000)).toBe(1);
    expect(deps.store.get("m1")?.status).toBe("failed");
    expect("claim" in deps.idempotency.begin(claim, "p", 1000)).toBe(true);
  });

  test("keys must be 1 to 255 printable characters", () => {
    expect(checkIdempotencyKey("order-42 retry")).toBe("order-42 retry");
    for (const bad of ["", "x".repeat(256), "tab\there", "é"]) {
      expect(() => checkIdempotencyKey(bad)).toThrow("idempotency-key");
    }
  });
});
