// Backups and retention with a real server (docs/operations.md):
// - `bun run textwire backup FILE` taken while a stream of sends runs gives a file that passes
//   integrity_check, and a server started on it serves every message acknowledged before the
//   backup began; on PostgreSQL it points to pg_dump and exits 2;
// - a maintenance round purges rows past retention and keeps the rest.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { call, history, newPhone, type SendResult } from "./api";
import { onPostgres, runCli, sqliteDatabase, startServer, testDatabase, testOnSqlite, waitFor, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(90_000);

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.kill();
});

const DAY_MS = 86_400_000;

describe("backup", () => {
  testOnSqlite("a backup taken during a stream of sends passes integrity_check, and a server on it has every message acknowledged before it began", async () => {
    const db = sqliteDatabase();
    const server = await startServer({ db });
    servers.push(server);
    const phones = [newPhone(), newPhone(), newPhone()];
    const acked: { id: string; phone: string }[] = [];
    let writing = true;
    // One sender a phone, each at most 90 sends (history pages hold 100).
    const senders = phones.map(async (phone) => {
      for (let i = 0; i < 90 && writing; i++) {
        const r = await call<SendResult>(server, "POST", "/api/send", { body: { phone, message: `m${i}` } });
        if (r.status !== 200) throw new Error(`send failed during the backup: ${r.status} ${r.text}`);
        acked.push({ id: r.body.message_id, phone });
      }
    });
    await waitFor("some sends acknowledged", 30_000, () => acked.length >= 30);
    const before = [...acked];
    const file = join(db.dir, "backup.db");
    const result = await runCli(["backup", file], { DATABASE_URL: db.url });
    writing = false;
    await Promise.all(senders);

    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`backed up to ${file}`);
    expect(result.stdout).toContain("integrity ok");
    expect(Number(/messages\s+(\d+)/.exec(result.stdout)?.[1])).toBeGreaterThanOrEqual(before.length);

    const again = await runCli(["backup", file], { DATABASE_URL: db.url });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("exists; give --force to replace it");

    const restored = await startServer({ db: sqliteDatabase(file) });
    servers.push(restored);
    for (const phone of phones) {
      const ids = new Set((await history(restored, phone, "limit=100")).messages.map((m) => m.id));
      for (const m of before.filter((b) => b.phone === phone)) expect(ids.has(m.id), `message ${m.id} acknowledged before the backup`).toBe(true);
    }
  });

  test("on PostgreSQL the command names pg_dump and exits 2", async () => {
    const db = onPostgres ? await testDatabase() : undefined;
    const result = await runCli(["backup", "/tmp/never-written.db"], { DATABASE_URL: db?.url ?? "postgres://postgres@127.0.0.1:5432/textwire" });
    await db?.cleanup();
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("pg_dump --format=custom");
    // The section it points to is there, under that name.
    const [, file, section] = /\((docs\/[\w.]+), section "([^"]+)"\)/.exec(result.stderr)!;
    expect(readFileSync(join(import.meta.dir, "../..", file!), "utf8").split("\n")).toContain(`## ${section}`);
    expect(existsSync("/tmp/never-written.db")).toBe(false);
  });
});

describe("retention", () => {
  test("a maintenance round deletes generations, events and (with MESSAGE_RETENTION_DAYS) messages past retention, keeps the rest, and counts them in a metric", async () => {
    const metricsToken = "tw_metrics_token_0123456789abcdef";
    const server = await startServer({ env: { MAINTENANCE_INTERVAL_MS: "200", MESSAGE_RETENTION_DAYS: "30", GENERATIONS_RETENTION_DAYS: "10", METRICS_TOKEN: metricsToken } });
    servers.push(server);
    const { db } = server;
    const phone = newPhone();
    const old = await call<SendResult>(server, "POST", "/api/send", { body: { phone, message: "old" } });
    const kept = await call<SendResult>(server, "POST", "/api/send", { body: { phone, message: "kept" } });
    const insert = "INSERT INTO generations (id, phone, body, model, created_at) VALUES (?, ?, 'hi', 'm', ?)";
    await db.run(insert, "gen-old", phone, Date.now() - 11 * DAY_MS);
    await db.run(insert, "gen-new", phone, Date.now() - 9 * DAY_MS);
    await db.run("UPDATE messages SET timestamp = timestamp - ? WHERE id = ?", 31 * DAY_MS * 1000, old.body.message_id);
    await db.run("UPDATE events SET timestamp = timestamp - ?", 31 * DAY_MS * 1000);

    await waitFor("the old message to be purged", 15_000, async () => (await db.query("SELECT 1 FROM messages WHERE id = ?", old.body.message_id)).length === 0, () => server.stdout);
    await waitFor("the old generation to be purged", 15_000, async () => (await db.query("SELECT 1 FROM generations WHERE id = 'gen-old'")).length === 0, () => server.stdout);
    await waitFor("the old events to be purged", 15_000, async () => (await db.query("SELECT 1 FROM events")).length === 0, () => server.stdout);
    expect(await db.query("SELECT id FROM generations")).toEqual([{ id: "gen-new" }]);
    const page = await history(server, phone);
    expect(page.messages.map((m) => m.id)).toEqual([kept.body.message_id]);
    expect(page.total).toBe(1);
    expect(server.stdout).toContain("deleted rows past retention");
    const scrape = await (await server.fetch("/metrics", {}, metricsToken)).text();
    expect(scrape).toContain('textwire_retention_purged_rows_total{table="generations"} 1');
    expect(scrape).toContain('textwire_retention_purged_rows_total{table="messages"} 1');
  });
});
