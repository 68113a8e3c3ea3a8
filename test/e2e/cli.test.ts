// The textwire CLI (docs/operations.md) works on the same database as a running server: keys
// it creates or revokes take effect at once, messages it sends or receives appear in
// the server's history and poll; bad input is a non-zero exit with one line on stderr.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectRecord, expectSendResult, expectStrictlyIncreasing, history, inbound, newPhone, poll, send, type SendResult } from "./api";
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

  test("chats: create a group, send into it with --chat, list chats and a chat's messages", async () => {
    const [a, b] = [newPhone(), newPhone()];
    const made = await cli("chats", "create", `${a},${b}`, "Hello, group", "--name", "CLI group");
    expect(made.code).toBe(0);
    const { chat } = JSON.parse(made.stdout) as { chat: { id: string; name: string; participants: string[] } };
    expect(chat).toMatchObject({ name: "CLI group", participants: [a, b] });
    const sent = parseJson(await cli("send", "--chat", chat.id, "-1 degrees out, bring coats"));
    const listed = await cli("chats", "list", "--kind", "group");
    expect(listed.code).toBe(0);
    expect(lines(listed.stdout).find((l) => l.startsWith(chat.id))).toContain("CLI group");
    const page = JSON.parse((await cli("chats", "messages", chat.id)).stdout) as { total: number; messages: { id: string; message: string; phone: string | null }[] };
    expect(page.total).toBe(2);
    expect(page.messages[0]).toMatchObject({ id: sent.message_id, message: "-1 degrees out, bring coats", phone: null });
    // The running server sees the same chat.
    expect((await call<{ chat: { name: string } }>(server, "GET", `/api/chats/${chat.id}`)).body.chat.name).toBe("CLI group");
    expectOneLineError(await cli("chats", "create", a, "solo"), "participants");
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

  test("an option a command does not take is named, exit 2", async () => {
    for (const args of [["keys", "list", "--all"], ["keys", "revoke", "ci", "--force"], ["network", "-v"], ["read", "+14155550123", "--all=1"]]) {
      const r = await cli(...args);
      const option = args.at(-1)!.split("=")[0]!;
      expect([args, r.code, lines(r.stderr)]).toEqual([args, 2, [`textwire: unknown option ${option} (see: bun run textwire help)`]]);
    }
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

describe("webhooks", () => {
  const RECEIVER = "http://127.0.0.1:9/hooks/cli";
  let server: Server;
  let db: TestDatabase;
  const cli = (...args: string[]) => runCli(["webhooks", ...args], { DATABASE_URL: db.url, ALLOW_PRIVATE_URLS: "true" });
  /** The JSON a command printed; fails with its stderr when it exited non-zero. */
  const json = (r: CliResult) => {
    if (r.code !== 0) throw new Error(`CLI failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, any>;
  };
  let id = "";

  beforeAll(async () => {
    db = await testDatabase();
    server = await startServer({ db, mode: "api", env: { ALLOW_PRIVATE_URLS: "true" } });
  }, 60_000);
  afterAll(async () => {
    server?.kill();
    await db?.cleanup();
  });

  test("create prints the endpoint with its secret once; the server lists it without", async () => {
    const r = await cli("create", RECEIVER, "--events", "message.received,message.status_updated", "--description", "From the CLI");
    const endpoint = json(r);
    expect(endpoint).toMatchObject({ url: RECEIVER, events: ["message.received", "message.status_updated"], description: "From the CLI", enabled: true });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(r.stderr).toContain("not shown again");
    id = endpoint.id;
    const got = await call<{ endpoint: Record<string, unknown> }>(server, "GET", `/api/webhook-endpoints/${id}`);
    expect(got.status).toBe(200);
    expect(got.body.endpoint).toEqual({ ...endpoint, secret: undefined });
    expect(got.text).not.toContain(endpoint.secret);
  });

  test("list shows each endpoint's id, state, events and URL, never a secret", async () => {
    const r = await cli("list");
    expect(r.code).toBe(0);
    const row = r.stdout.split("\n").find((l) => l.startsWith(id));
    expect(row).toBeDefined();
    for (const part of ["enabled", "message.received,message.status_updated", RECEIVER]) expect(row).toContain(part);
    expect(r.stdout).not.toContain("whsec_");
  });

  test("update changes what it is given: --disable, --all-events, --enable, --url, --description", async () => {
    expect(json(await cli("update", id, "--disable"))).toMatchObject({ id, enabled: false, events: ["message.received", "message.status_updated"] });
    expect((await call<{ endpoint: { enabled: boolean } }>(server, "GET", `/api/webhook-endpoints/${id}`)).body.endpoint.enabled).toBe(false);
    expect(json(await cli("update", id, "--all-events", "--enable"))).toMatchObject({ enabled: true, events: null });
    const moved = json(await cli("update", id, "--url", `${RECEIVER}/v2`, "--description", "moved", "--events", "message.received"));
    expect(moved).toMatchObject({ url: `${RECEIVER}/v2`, description: "moved", events: ["message.received"] });
    expect("secret" in moved).toBe(false);
  });

  test("rotate-secret prints a new secret", async () => {
    const first = json(await cli("rotate-secret", id));
    const second = json(await cli("rotate-secret", id));
    expect(first.secret).toMatch(/^whsec_/);
    expect(second.secret).not.toBe(first.secret);
  });

  test("deliveries lists the endpoint's deliveries; replay queues events again", async () => {
    const phone = newPhone();
    const m = (await call<SendResult>(server, "POST", "/webhooks/loopback", { body: { phone, message: "for the CLI" } })).body;
    const events = (await call<{ events: { id: string; data: { id: string } }[] }>(server, "GET", "/api/events?type=message.received")).body.events;
    const event = events.find((e) => e.data.id === m.message_id)!;
    const r = await cli("deliveries", id);
    expect(r.code).toBe(0);
    const row = r.stdout.split("\n").find((l) => l.includes(event.id));
    expect(row).toBeDefined();
    expect(row).toContain("pending");
    expect(row).toMatch(/^dlv_/);
    expect((await cli("deliveries", id, "--status", "failed")).stdout).toContain("no deliveries failed");
    expect((await cli("deliveries", id, "--status", "pending", "--limit", "1")).stdout.trim().split("\n")).toHaveLength(2);
    expect(json(await cli("replay", id, "--since", "2000-01-01T00:00:00Z"))).toEqual({ success: true, queued: 1 });
  });

  test("delete removes it: the server answers 404", async () => {
    const r = await cli("delete", id);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(id);
    expect((await call(server, "GET", `/api/webhook-endpoints/${id}`)).status).toBe(404);
  });

  const bad: [string, string[], string?][] = [
    ["an ftp URL", ["create", "ftp://127.0.0.1/x"], "url"],
    ["an unknown event type", ["create", RECEIVER, "--events", "message.sent"], "events"],
    ["a repeated event type", ["create", RECEIVER, "--events", "message.received,message.received"], "events"],
    ["an option of another command", ["create", RECEIVER, "--status", "failed"], "--status"],
    ["no URL", ["create"], "url"],
    ["an unknown endpoint", ["update", "we_nope", "--disable"], "not found"],
    ["nothing to change", ["update", "we_nope"], "needs at least one of --url, --events, --all-events, --description, --enable, --disable"],
    ["--enable with --disable", ["update", "we_nope", "--enable", "--disable"], "--enable"],
    ["--events with --all-events", ["update", "we_nope", "--events", "message.received", "--all-events"], "--all-events"],
    ["delete of an unknown endpoint", ["delete", "we_nope"], "not found"],
    ["rotate-secret of an unknown endpoint", ["rotate-secret", "we_nope"], "not found"],
    ["a bad status", ["deliveries", "we_nope", "--status", "done"], "status"],
    ["a limit of 0", ["deliveries", "we_nope", "--limit", "0"], "limit"],
    ["replay without --since", ["replay", "we_nope"], "--since"],
    ["replay with a since that is not ISO 8601", ["replay", "we_nope", "--since", "yesterday"], "since"],
    ["an unknown subcommand", ["frobnicate"], "webhooks"],
  ];
  for (const [what, args, mentions] of bad) {
    test(`${what}: non-zero exit, one line`, async () => {
      expectOneLineError(await cli(...args), mentions);
    });
  }

  test("usage errors exit 2 and speak of the command line: update with no flag, an unknown option", async () => {
    for (const [args, line] of [
      [["update", "we_nope"], "textwire: webhooks update ID needs at least one of --url, --events, --all-events, --description, --enable, --disable (see: bun run textwire help)"],
      [["list", "--bogus"], "--bogus"],
      [["delete", "we_nope", "--force"], "--force"],
    ] as [string[], string][]) {
      const r = await cli(...args);
      expect([args, r.code, lines(r.stderr).length, lines(r.stderr)[0]!.includes(line)]).toEqual([args, 2, 1, true]);
    }
  });

  test("without ALLOW_PRIVATE_URLS an http URL is refused, naming url, and nothing is stored", async () => {
    const before = (await call<{ endpoints: unknown[] }>(server, "GET", "/api/webhook-endpoints")).body.endpoints.length;
    expectOneLineError(await runCli(["webhooks", "create", RECEIVER], { DATABASE_URL: db.url }), "url: must be an https url");
    expectOneLineError(await runCli(["webhooks", "create", "https://10.0.0.1/x"], { DATABASE_URL: db.url }), "private");
    expect((await call<{ endpoints: unknown[] }>(server, "GET", "/api/webhook-endpoints")).body.endpoints.length).toBe(before);
  });
});

describe("reactions, edits, unsends, typing and read marks", () => {
  let server: Server;
  let db: TestDatabase;
  const cli = (...args: string[]) => runCli(args, { DATABASE_URL: db.url });
  /** The JSON a command printed; fails with its stderr when it exited non-zero. */
  const json = (r: CliResult) => {
    if (r.code !== 0) throw new Error(`CLI failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, any>;
  };
  const record = async (phone: string, id: string) => (await history(server, phone)).messages.find((m) => m.id === id) as Record<string, any>;

  beforeAll(async () => {
    db = await testDatabase();
    server = await startServer({ db });
  }, 60_000);
  afterAll(async () => {
    server?.kill();
    await db?.cleanup();
  });

  test("network prints the network's capabilities", async () => {
    expect(json(await cli("network"))).toEqual({
      name: "loopback",
      capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true },
    });
  });

  test("react, unreact, edit and unsend change the message the server shows", async () => {
    const phone = newPhone();
    const sent = await send(server, phone, "Meet at 9");
    expect(json(await cli("react", sent.message_id, "love")).message.reactions).toEqual([{ reaction: "love", direction: "outbound", phone: null, timestamp: expect.any(String) }]);
    expect((await record(phone, sent.message_id)).reactions.map((r: { reaction: string }) => r.reaction)).toEqual(["love"]);
    expect(json(await cli("unreact", sent.message_id)).message.reactions).toEqual([]);
    expect(json(await cli("edit", sent.message_id, "Meet at 10")).message).toMatchObject({ message: "Meet at 10", edited_at: expect.any(String) });
    expect((await record(phone, sent.message_id)).message).toBe("Meet at 10");
    expect(json(await cli("unsend", sent.message_id)).message).toMatchObject({ message: "", unsent_at: expect.any(String) });
    expect((await record(phone, sent.message_id)).unsent_at).toEqual(expect.any(String));
  });

  test("typing on and off; read zeroes the contact's unread", async () => {
    const phone = newPhone();
    expect(json(await cli("typing", phone, "on"))).toEqual({ success: true, typing: true });
    expect(json(await cli("typing", phone, "off"))).toEqual({ success: true, typing: false });
    await inbound(server, phone, "are you there?");
    expect(json(await cli("read", phone)).contact).toMatchObject({ phone, unread: 0 });
    expect((await call<{ contact: { unread: number } }>(server, "GET", `/api/contacts/${encodeURIComponent(phone)}`)).body.contact.unread).toBe(0);
  });

  const bad: [string, string[], string][] = [
    ["an unknown reaction", ["react", "some-id", "wow"], "reaction"],
    ["a reaction to an unknown message", ["react", crypto.randomUUID(), "love"], "not found"],
    ["edit without its text", ["edit", "some-id"], "expected id message"],
    ["an edit of an unknown message", ["edit", crypto.randomUUID(), "new text"], "not found"],
    ["unsend of an unknown message", ["unsend", crypto.randomUUID()], "not found"],
    ["typing neither on nor off", ["typing", "+14155550123", "maybe"], "on or off"],
    ["typing to a malformed phone", ["typing", "4155550123", "on"], "phone"],
    ["read of a malformed phone", ["read", "nope"], "phone"],
    ["network with an argument", ["network", "loopback"], "expected"],
  ];
  for (const [what, args, mentions] of bad) {
    test(`${what}: non-zero exit, one line`, async () => {
      expectOneLineError(await cli(...args), mentions);
    });
  }
});
