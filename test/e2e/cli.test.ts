// The textwire CLI (docs/operations.md) works on the same database as a running server: keys
// it creates or revokes take effect at once, messages it sends or receives appear in
// the server's history and poll; bad input is a non-zero exit with one line on stderr.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectRecord, expectSendResult, expectStrictlyIncreasing, history, newPhone, poll, send, type SendResult } from "./api";
import { KEY_PATTERN, lines, runCli, startServer, testDatabase, type CliResult, type Server, type TestDatabase } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const WHOLE_KEY = /^tw_[A-Za-z0-9_-]{24,}$/;

function expectOneLineError(r: CliResult, mentions?: string): void {
  if (r.code === 0) throw new Error(`expected a non-zero exit; stdout: ${r.stdout}`);
  const errLines = lines(r.stderr);
  if (errLines.length !== 1) throw new Error(`expected one line on stderr, got ${errLines.length}:\n${r.stderr}`);
  if (mentions) expect(errLines[0]!.toLowerCase()).toContain(mentions);
  expect(r.stderr).not.toMatch(/^\s*at\s/m);
}

/** The key printed by `keys create`: alone on the first line of stdout. */
function createdKey(r: CliResult): string {
  if (r.code !== 0) throw new Error(`keys create failed (${r.code}): ${r.stderr}`);
  const first = r.stdout.split(/\r?\n/)[0] ?? "";
  expect(first).toMatch(WHOLE_KEY);
  return first;
}

function parseJson(r: CliResult): SendResult {
  if (r.code !== 0) throw new Error(`CLI failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim()) as SendResult;
}

describe("with a server running on the same database", () => {
  let server: Server;
  let db: TestDatabase;
  const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });
  let botKey = "";
  let otherKey = "";

  beforeAll(async () => {
    db = await testDatabase();
    server = await startServer({ db });
  }, 60_000);
  afterAll(async () => {
    server?.kill();
    await db?.cleanup();
  });

  test("keys create prints a new key alone on the first line, and the running server accepts it at once", async () => {
    botKey = createdKey(await cli("keys", "create", "--name", "ci-bot"));
    const reply = await call(server, "GET", "/api/messages/poll", { key: botKey });
    expect(reply.status).toBe(200);
    const sent = await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: "from a CLI key" }, key: botKey });
    expect(sent.status).toBe(200);
  });

  test("a second key is different and works too", async () => {
    otherKey = createdKey(await cli("keys", "create", "--name", "reporting"));
    expect(otherKey).not.toBe(botKey);
    expect((await call(server, "GET", "/api/messages/poll", { key: otherKey })).status).toBe(200);
  });

  test("keys list shows the names but never a whole key (nor 16 characters of one)", async () => {
    const r = await cli("keys", "list");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("ci-bot");
    expect(r.stdout).toContain("reporting");
    for (const key of [botKey, otherKey, server.apiKey]) {
      for (let i = 0; i + 16 <= key.length; i++) {
        if (r.stdout.includes(key.slice(i, i + 16)) || r.stderr.includes(key.slice(i, i + 16))) {
          throw new Error(`keys list shows part of a key: ${key.slice(i, i + 16)}`);
        }
      }
    }
  });

  test("the database holds no key in plain text", async () => {
    const bytes = await db.contents();
    expect(bytes.length).toBeGreaterThan(0);
    for (const key of [botKey, otherKey]) expect(bytes.includes(key)).toBe(false);
  });

  test("keys revoke stops that key at once (401) and leaves the others working", async () => {
    const r = await cli("keys", "revoke", "ci-bot");
    expect(r.code).toBe(0);
    const refused = await call(server, "GET", "/api/messages/poll", { key: botKey });
    expect(refused.status).toBe(401);
    expect((await call(server, "GET", "/api/messages/poll", { key: otherKey })).status).toBe(200);
    expect((await call(server, "GET", "/api/messages/poll")).status).toBe(200);
  });

  test("send prints the API's answer, and the running server's history shows the message delivered", async () => {
    const phone = newPhone();
    const result = parseJson(await cli("send", phone, "Sent from the CLI ✓"));
    expectSendResult(result);
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: result.message_id, phone, message: "Sent from the CLI ✓", direction: "outbound", status: "delivered", timestamp: result.timestamp });
  });

  test("inbound prints the API's answer, and the running server's poll returns the message", async () => {
    const phone = newPhone();
    const result = parseJson(await cli("inbound", phone, "Reply from a customer"));
    expectSendResult(result);
    const res = await poll(server, { phone });
    expect(res.count).toBe(1);
    expectRecord(res.messages[0]!, { id: result.message_id, phone, message: "Reply from a customer", direction: "inbound", status: "received", timestamp: result.timestamp });
  });

  test("one clock across processes: server, CLI, server sends get strictly increasing timestamps", async () => {
    const phone = newPhone();
    const a = await send(server, phone, "server 1");
    const b = parseJson(await cli("send", phone, "cli"));
    const c = await send(server, phone, "server 2");
    expectStrictlyIncreasing([a.timestamp, b.timestamp, c.timestamp]);
    expect((await history(server, phone)).messages.map((m) => m.id)).toEqual([c.message_id, b.message_id, a.message_id]);
  });

  test("send to a malformed phone: non-zero exit, one line naming the phone", async () => {
    expectOneLineError(await cli("send", "+1415555012", "hi"), "phone");
  });

  test("send of a whitespace-only message: non-zero exit, one line naming the message, nothing stored", async () => {
    const phone = newPhone();
    expectOneLineError(await cli("send", phone, "   "), "message");
    expect((await history(server, phone)).total).toBe(0);
  });

  test("inbound from a malformed phone: non-zero exit, one line naming the phone", async () => {
    expectOneLineError(await cli("inbound", "4155550123", "hi"), "phone");
  });

  test("send without a message: non-zero exit, one line", async () => {
    expectOneLineError(await cli("send", newPhone()));
  });

  test("keys create without --name: non-zero exit, one line, no key printed", async () => {
    const r = await cli("keys", "create");
    expectOneLineError(r);
    expect(r.stdout.match(KEY_PATTERN)).toBeNull();
  });

  test("keys revoke of an unknown name: non-zero exit, one line", async () => {
    expectOneLineError(await cli("keys", "revoke", "no-such-key"));
  });

  test("an unknown command: non-zero exit, one line", async () => {
    expectOneLineError(await cli("frobnicate"));
  });

  test("the server's own output never shows a CLI-created key", () => {
    for (const key of [botKey, otherKey]) {
      expect(server.stdout).not.toContain(key);
      expect(server.stderr).not.toContain(key);
    }
  });
});

describe("before the first start", () => {
  test("a key created by the CLI on a new database is honoured, and the server generates none", async () => {
    const db = await testDatabase();
    let server: Server | undefined;
    try {
      const key = createdKey(await runCli(["keys", "create", "--name", "first"], { DATABASE_URL: db.url }));
      server = await startServer({ db, apiKey: null });
      expect(server.stdout.match(KEY_PATTERN)).toBeNull();
      expect((await call(server, "GET", "/api/messages/poll", { key })).status).toBe(200);
    } finally {
      server?.kill();
      await db.cleanup();
    }
  });
});
