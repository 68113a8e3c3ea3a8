// Start-up and configuration (docs/operations.md): the first key is generated and printed
// once, bad configuration stops the process with one line naming the variable,
// /health needs no key, the database file and its folder are created.
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { call, history, newPhone, send } from "./api";
import { KEY_PATTERN, lines, newApiKey, testOnSqlite, fileServers, spawnServer, sqliteDatabase, testDatabase, type Server, type StartOptions, type TestDatabase } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const files = fileServers();
const newDb = files.track;
const boot = (opts: StartOptions): Promise<Server> => files.boot(opts);

describe("the first API key", () => {
  let db: TestDatabase;
  let key = "";
  beforeAll(async () => {
    db = newDb(await testDatabase());
  });

  test("with no key anywhere, the server creates one, prints it once on stderr outside the log stream, and it works", async () => {
    const server = await boot({ db, apiKey: null });
    const printed = server.stderr.match(KEY_PATTERN) ?? [];
    expect(printed).toHaveLength(1);
    key = printed[0]!;
    expect(server.stderr.split(key).length - 1).toBe(1);
    expect((await call(server, "GET", "/api/messages/poll", { key })).status).toBe(200);
    expect((await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: "first" }, key })).status).toBe(200);
    expect(await server.stop()).toBe(0);
    // The JSON log lines (stdout) never hold it: not when printed, not when used.
    expect(server.stdout).not.toContain(key);
    expect(server.stdout).not.toContain(key.slice(10));
  });

  test("only its hash is stored: the database does not hold the key", async () => {
    const bytes = await db.contents();
    expect(bytes.length).toBeGreaterThan(0);
    expect(bytes.includes(key)).toBe(false);
  });

  test("a second start on the same database prints no key, and the first key still works", async () => {
    expect(key).toMatch(/^tw_/);
    const server = await boot({ db, apiKey: null });
    expect(server.stdout.match(KEY_PATTERN)).toBeNull();
    expect(server.stderr.match(KEY_PATTERN)).toBeNull();
    expect((await call(server, "GET", "/api/messages/poll", { key })).status).toBe(200);
  });

  test("with API_KEYS set on a new database, no key is generated or printed", async () => {
    const apiKey = newApiKey();
    const server = await boot({ db: newDb(await testDatabase()), apiKey });
    expect(server.stdout.match(KEY_PATTERN)).toBeNull();
    expect(server.stderr.match(KEY_PATTERN)).toBeNull();
  });
});

describe("a bad configuration value stops the process with one line naming the variable", () => {
  const bad: [string, string][] = [
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["MAX_MESSAGE_LENGTH", "-5"],
    ["MAX_MESSAGE_LENGTH", "ten"],
    ["RATE_LIMIT_PER_MINUTE", "lots"],
    ["RATE_LIMIT_BURST", "-1"],
    ["LOG_LEVEL", "verbose"],
    ["GENERATOR_TIMEOUT_MS", "soon"],
    ["API_KEYS", "tw_short"],
  ];
  for (const [name, value] of bad) {
    test(`${name}=${value}`, async () => {
      const child = await spawnServer({ env: { [name]: value } });
      const code = await child.exited();
      expect(code).not.toBe(0);
      expect(child.stdout).not.toMatch(/listening on/);
      const errLines = lines(child.stderr);
      if (errLines.length !== 1) throw new Error(`expected one line on stderr, got:\n${child.stderr}\n--- stdout ---\n${child.stdout}`);
      expect(errLines[0]!).toContain(name);
      expect(child.stderr).not.toMatch(/^\s*at\s/m);
    });
  }

  test("a bad API_KEYS value is not echoed", async () => {
    const secretish = "tw_" + "x".repeat(10) + "!" + "y".repeat(20);
    const child = await spawnServer({ apiKey: secretish });
    expect(await child.exited()).not.toBe(0);
    expect(child.stderr).toContain("API_KEYS");
    expect(child.stderr + child.stdout).not.toContain(secretish);
  });
});

describe("running", () => {
  test("GET /health answers 200 {status: ok} without a key", async () => {
    const server = await boot({});
    const res = await server.fetch("/health", {}, null);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type") ?? "").toContain("application/json");
    expect(await res.json()).toEqual({ status: "ok" });
  });

  // SQLite URLs: a file (and its folder) created, and :memory:.
  testOnSqlite("the database file is created with its folder", async () => {
    const db = newDb(sqliteDatabase("a/b/textwire.db"));
    const server = await boot({ db });
    const phone = newPhone();
    await send(server, phone, "stored in a new folder");
    expect(existsSync(db.url)).toBe(true);
    expect((await history(server, phone)).total).toBe(1);
  });

  testOnSqlite("DATABASE_URL=:memory: works", async () => {
    const server = await boot({ db: newDb(sqliteDatabase(":memory:")) });
    const phone = newPhone();
    await send(server, phone, "in memory");
    expect((await history(server, phone)).total).toBe(1);
  });

  test("two servers on PORT=0 get different ports", async () => {
    const [a, b] = await Promise.all([boot({}), boot({})]);
    expect(a.url).not.toBe(b.url);
    expect(a.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  test("a port in use: one line naming PORT, no stack trace, exit 1", async () => {
    const taken = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("taken") });
    try {
      const child = await spawnServer({ db: newDb(await testDatabase()), env: { PORT: String(taken.port) } });
      expect(await child.exited()).toBe(1);
      expect(lines(child.stderr)).toEqual([`textwire: PORT: 127.0.0.1:${taken.port} is in use by another process; stop it or set another PORT`]);
    } finally {
      taken.stop(true);
    }
  });

  test("every log line on stdout is a JSON object", async () => {
    const server = await boot({});
    await send(server, newPhone(), "log me");
    await call(server, "GET", "/api/nothing");
    const out = lines(server.stdout);
    expect(out.length).toBeGreaterThan(0);
    for (const line of out) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
      expect(parsed).toBeObject();
    }
  });
});
