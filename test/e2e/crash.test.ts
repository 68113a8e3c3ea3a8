/**
 * Crash safety (docs/api.md: "an outbound message is stored before the network is asked to
 * send it, so a crash never loses an accepted message"; README: WAL + synchronous=NORMAL,
 * "a committed write survives a crash of the process").
 *
 * A write load (concurrent sends and inbound webhooks) runs against the server; the
 * process is SIGKILLed in the middle of it, at three different moments; the server is
 * started again on the same database file. Every message whose acknowledgement arrived
 * must be there, unchanged, with its final status (an acknowledged send was delivered on
 * the loopback network before it was answered). Messages that were in flight at the kill
 * may or may not be there; a send they left `queued` is marked `failed` by a start two
 * minutes later (README, Crash safety; the two minutes are simulated in the file).
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { startServer, testDatabase, waitFor, type Server, type TestDatabase } from "./harness";
import { compareAcks, fullHistory, LOAD_PHONES, post, storedLoad, writeLoad, type Ack, type LoadState } from "./scenarios";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const KILL_AFTER_MS = [700, 1500, 2300];
const REQUEST_TIMEOUT_MS = 10_000;

const servers: Server[] = [];

const db = await testDatabase();

afterAll(async () => {
  for (const s of servers) s.kill();
  await db.cleanup();
});

async function start(db: TestDatabase): Promise<Server> {
  const server = await startServer({ db, env: { RATE_LIMIT_PER_MINUTE: "0", OPENAI_API_KEY: "" } });
  servers.push(server);
  return server;
}

test(
  "SIGKILL in the middle of a write load, at three moments: every acknowledged message survives",
  async () => {
    const acks = new Map<string, Ack>();
    const observations: string[] = [];
    let server = await start(db);

    for (const [round, killAfter] of KILL_AFTER_MS.entries()) {
      const state: LoadState = { stopped: false, errorsBeforeStop: [] };
      const before = acks.size;
      const load = writeLoad(server, round, acks, state);
      // Count the moment of the kill from when the load is flowing (bounded wait).
      for (const waitUntil = Date.now() + 10_000; acks.size - before < 20 && Date.now() < waitUntil; ) await Bun.sleep(5);
      await Bun.sleep(killAfter);
      state.stopped = true;
      // SIGKILL to the whole process group: `bun run` does not forward signals to the server.
      server.kill();
      await server.proc.exited;
      await load;
      expect(server.proc.signalCode).toBe("SIGKILL");
      expect(state.errorsBeforeStop.slice(0, 10)).toEqual([]);
      // The load really was under way when the process died.
      expect(acks.size - before).toBeGreaterThanOrEqual(20);

      server = await start(db);
      const stored = await storedLoad(server);
      const { missing, changed } = compareAcks(acks, stored);
      expect(missing.slice(0, 20)).toEqual([]);
      expect(changed.slice(0, 20)).toEqual([]);

      // In flight at the kill: stored or not, both are fine; note what they look like.
      const unacknowledged = [...stored.values()].filter((m) => !acks.has(m.id));
      const byStatus = new Map<string, number>();
      for (const m of unacknowledged) byStatus.set(`${m.direction}/${m.status}`, (byStatus.get(`${m.direction}/${m.status}`) ?? 0) + 1);
      const queued = [...stored.values()].filter((m) => m.status === "queued");
      observations.push(
        `round ${round} (kill after ${killAfter} ms): ${acks.size - before} acknowledged this round, ${acks.size} in all, all present; ` +
          `stored but unacknowledged: ${unacknowledged.length} {${[...byStatus].map(([k, n]) => `${k}:${n}`).join(", ")}}; ` +
          `queued after restart: ${queued.length}${queued.length ? ` (${queued.map((m) => m.id).join(", ")})` : ""}`,
      );
    }

    // The restarted server is whole: it serves reads and writes.
    const health = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    expect(health.status).toBe(200);
    const after = await post(server, "/api/send", { phone: LOAD_PHONES[0], message: "after the crashes" });
    expect(after.status).toBe(200);
    const inboundAfter = await post(server, "/webhooks/loopback", { phone: LOAD_PHONES[1], message: "after the crashes, inbound", id: "crash-after" });
    expect(inboundAfter.status).toBe(200);

    // Sends the kills left `queued` (stored, never answered).
    const queuedBefore = [...(await storedLoad(server)).values()].filter((m) => m.status === "queued");
    expect(await server.stop("SIGTERM")).toBe(0);

    // A SQLite file is sound after three SIGKILLs. Then two minutes pass (the rows left
    // `queued` by the kills are moved back three minutes: README, Crash safety).
    if (db.dialect === "sqlite") expect(await db.query("PRAGMA integrity_check")).toEqual([{ integrity_check: "ok" }]);
    expect(await db.run("UPDATE messages SET updated_at = updated_at - 180000000 WHERE status = 'queued'")).toBe(queuedBefore.length);

    server = await start(db);
    // The start's first maintenance round runs beside the server, not before it listens.
    const final = await waitFor("the start's maintenance round", 10_000, async () => {
      const rows = await storedLoad(server);
      return queuedBefore.some((m) => rows.get(m.id)?.status === "queued") ? undefined : rows;
    });
    const { missing, changed } = compareAcks(acks, final);
    expect(missing.slice(0, 20)).toEqual([]);
    expect(changed.slice(0, 20)).toEqual([]);
    const queuedAfter = [...final.values()].filter((m) => m.status === "queued");
    const resolved = queuedBefore.map((m) => `${m.id}: ${final.get(m.id)?.status ?? "gone"}${final.get(m.id)?.error ? ` (${final.get(m.id)?.error})` : ""}`);
    observations.push(`two minutes later, restarted: queued ${queuedBefore.length} → ${queuedAfter.length}${resolved.length ? ` [${resolved.join("; ")}]` : ""}`);
    console.log(`crash:\n  ${observations.join("\n  ")}`);
    // Queued sends cut off by the kills do not stay queued: they are failed, as interrupted.
    expect(queuedAfter.map((m) => m.id)).toEqual([]);
    for (const m of queuedBefore) {
      expect(final.get(m.id)?.status).toBe("failed");
      expect(final.get(m.id)?.error ?? "").toMatch(/interrupted/);
    }
    expect(await server.stop("SIGTERM")).toBe(0);
  },
  120_000,
);

test(
  "a send left `queued` by a crash does not stay queued: two minutes on, the next start marks it failed",
  async () => {
    // README, Crash safety: "A send still `queued` two minutes after it was stored was cut
    // off by a crash: it is marked `failed` (error `interrupted: …`), checked at start and
    // every minute." On the loopback network the window between storing and delivering
    // is too short for a SIGKILL to hit reliably, and two minutes are too long to wait;
    // so the crash leaves its rows the way a kill at that moment would, with their
    // timestamps moved back: one stored three minutes ago, one thirty seconds ago (which
    // may still belong to a live process sharing the file, and must be left alone).
    const file = await testDatabase();
    try {
      let server = await start(file);
      const before = await post(server, "/api/send", { phone: LOAD_PHONES[0], message: "before the crash" });
      expect(before.status).toBe(200);
      server.kill();
      await server.proc.exited;

      // The store counts time in microseconds since the epoch (docs/operations.md).
      const now = Date.now() * 1000;
      const stale = { id: Bun.randomUUIDv7(), at: now - 180_000_000 };
      const fresh = { id: Bun.randomUUIDv7(), at: now - 30_000_000 };
      const columns = (
        await file.query<{ name: string }>(
          file.dialect === "sqlite" ? "SELECT name FROM pragma_table_info('messages')" : "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'messages'",
        )
      )
        .map((c) => c.name)
        .sort();
      // The test writes rows the way the server stores a send; it needs these columns.
      expect(columns).toEqual(["body", "chat_id", "direction", "edit_count", "edited_at", "error", "id", "line_id", "media_count", "network", "network_id", "opt_out_type", "phone", "reaction_count", "read_at", "reply_to", "send_at", "status", "timestamp", "unsent_at", "updated_at"]);
      const insert = "INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at) VALUES (?, ?, ?, 'outbound', 'queued', ?, 'loopback', NULL, NULL, ?)";
      await file.run(insert, stale.id, LOAD_PHONES[0] as string, "cut off three minutes ago", stale.at, stale.at);
      await file.run(insert, fresh.id, LOAD_PHONES[0] as string, "cut off thirty seconds ago", fresh.at, fresh.at);

      server = await start(file);
      // The start's first maintenance round runs beside the server, not before it listens.
      const byId = await waitFor("the start's maintenance round", 10_000, async () => {
        const rows = new Map((await fullHistory(server, LOAD_PHONES[0] as string)).map((m) => [m.id, m]));
        return rows.get(stale.id)?.status === "queued" ? undefined : rows;
      });
      expect(byId.get(before.json.message_id)?.status).toBe("delivered");
      const cutOff = byId.get(stale.id);
      expect(cutOff?.status).toBe("failed");
      expect(cutOff?.error ?? "").toMatch(/interrupted/);
      expect(byId.get(fresh.id)?.status).toBe("queued");
      expect(await server.stop("SIGTERM")).toBe(0);
    } finally {
      await file.cleanup();
    }
  },
  60_000,
);
