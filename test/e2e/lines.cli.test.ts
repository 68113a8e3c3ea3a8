// The CLI's lines (docs/lines.md, docs/operations.md): `textwire lines list|add|update|test|remove`,
// `send --line` and `secrets rotate`, run as `bun run textwire` on the database of a running
// server, with an android line on the stand-in SMS Gateway for Android
// (test/support/fake-android.ts). What the CLI changes, the server serves; bad usage exits 2 with
// one line naming the flag; a refusal by the service exits 1 with one line.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { startFakeAndroid, type FakeAndroid } from "../support/fake-android";
import { call, history, newPhone, type MessageRecord } from "./api";
import { fileServers, lines, runCli, testDatabase, waitFor, type CliResult, type Server, type TestDatabase } from "./harness";
import type { LineRecord } from "../../src/lines/schemas";

setDefaultTimeout(60_000);

const PUBLIC_URL = "https://textwire.example.test";
const OWN_NUMBER = "+14155550100";
const KEY_A = randomBytes(32).toString("base64");
const KEY_B = randomBytes(32).toString("hex");


const { boot, track } = fileServers();
let db: TestDatabase;
let server: Server;
let fake: FakeAndroid;
// A password of digits only, as a phone's app may show: it must stay a string.
const PASSWORD = "20481632";

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { DATABASE_URL: db.url, PUBLIC_URL, SECRET_KEY: KEY_A, ...env });

function ok(r: CliResult): string {
  if (r.code !== 0) throw new Error(`CLI exited ${r.code}:\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/** Exits `code` with one line on stderr containing `mentions`, and no stack trace. */
function expectOneLine(r: CliResult, code: number, mentions: string): void {
  if (r.code !== code) throw new Error(`expected exit ${code}, got ${r.code}:\n${r.stderr}\n${r.stdout}`);
  const errLines = lines(r.stderr);
  if (errLines.length !== 1) throw new Error(`expected one line on stderr, got ${errLines.length}:\n${r.stderr}`);
  expect(errLines[0]!).toContain(mentions);
  expect(r.stderr).not.toMatch(/^\s*at\s/m);
}

const androidArgs = () => [
  "--address", OWN_NUMBER,
  "--setting", `url=${fake.url}`,
  "--setting", `username=${fake.username}`,
  "--setting", "send_timeout_ms=5000",
  "--credential", `password=${PASSWORD}`,
  "--credential", `signing_key=${fake.signingKey}`,
];
const hooksOf = (l: LineRecord) => fake.webhooks.filter((w) => w.url === l.webhook_url);
const serverLines = async () => (await call<{ lines: LineRecord[] }>(server, "GET", "/api/lines")).body.lines;

beforeAll(async () => {
  db = track(await testDatabase());
  server = await boot({ db, env: { PUBLIC_URL, SECRET_KEY: KEY_A } });
  fake = startFakeAndroid({ password: PASSWORD, signingKey: "k3y-0f-the-app", ownNumber: OWN_NUMBER, proxy: { publicUrl: PUBLIC_URL, to: server.url } });
});
afterAll(async () => {
  await fake?.stop();
});

describe("textwire lines", () => {
  let phone: LineRecord;

  test("lines list shows the environment's line, default", async () => {
    const out = lines(ok(await cli(["lines", "list"])));
    expect(out[0]).toMatch(/^ID\s+NAME\s+NETWORK\s+ADDRESS\s+STATE$/);
    expect(out).toHaveLength(2);
    expect(out[1]).toMatch(/^ln_default\s+default\s+loopback\s+-\s+default, enabled, from the environment$/);
  });

  test("lines add makes an android line (its credentials never printed), registers its webhooks, and the running server serves it", async () => {
    const out = ok(await cli(["lines", "add", "phone", "android", ...androidArgs()]));
    phone = JSON.parse(out) as LineRecord;
    expect(phone).toMatchObject({ name: "phone", network: "android", address: OWN_NUMBER, enabled: true, default: false, webhook_url: `${PUBLIC_URL}/webhooks/lines/${phone.id}` });
    expect(phone.settings).toEqual({ url: fake.url, username: fake.username, send_timeout_ms: 5000 });
    expect(out).not.toContain(PASSWORD);
    expect(out).not.toContain(fake.signingKey);
    expect(hooksOf(phone).map((h) => h.event).sort()).toEqual(["sms:delivered", "sms:failed", "sms:received", "sms:sent"]);
    // Another process's change reaches the server within 5 s (docs/lines.md).
    await waitFor("the server to read the new line", 10_000, async () => (await serverLines()).some((l) => l.id === phone.id));

    const listed = lines(ok(await cli(["lines", "list"])));
    expect(listed.find((l) => l.startsWith(phone.id))).toMatch(new RegExp(`^${phone.id}\\s+phone\\s+android\\s+\\${OWN_NUMBER}\\s+enabled$`));
  });

  test("lines test checks the line (exit 0, ok true) and registers the same webhooks again; a refused password is exit 1, ok false", async () => {
    const ids = hooksOf(phone).map((h) => h.id).sort();
    const result = JSON.parse(ok(await cli(["lines", "test", "phone"]))) as { ok: boolean; detail: string };
    expect(result.ok).toBe(true);
    expect(result.detail).toContain(fake.deviceId);
    expect(hooksOf(phone).map((h) => h.id).sort()).toEqual(ids);
    expect(fake.webhooks).toHaveLength(4);

    // The gateway refuses the registration with a wrong password: exit 1, and nothing is changed.
    expectOneLine(await cli(["lines", "update", "phone", "--credential", "password=wrong-one"]), 1, "nothing was changed");
    expect(JSON.parse(ok(await cli(["lines", "test", "phone"]))).ok).toBe(true);
    // A disabled line is saved without registering; its test then says what the gateway refused (exit 1).
    expect(JSON.parse(ok(await cli(["lines", "update", "phone", "--disable", "--credential", "password=wrong-one"])))).toMatchObject({ enabled: false });
    const refused = await cli(["lines", "test", phone.id]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false });
    expect(JSON.parse(refused.stdout).detail).toContain("password");
    // Only the password changes: the signing key stays.
    expect(JSON.parse(ok(await cli(["lines", "update", "phone", "--enable", "--credential", `password=${PASSWORD}`])))).toMatchObject({ enabled: true });
    expect(JSON.parse(ok(await cli(["lines", "test", "phone"]))).ok).toBe(true);
  });

  test("lines update --disable and --enable, and the server follows", async () => {
    expect(JSON.parse(ok(await cli(["lines", "update", "phone", "--disable"])))).toMatchObject({ enabled: false });
    await waitFor("the server to see the line disabled", 10_000, async () => (await serverLines()).find((l) => l.id === phone.id)?.enabled === false);
    const refused = await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: "x", line: "phone" } });
    expect(refused.status).toBe(409);
    expect(JSON.parse(ok(await cli(["lines", "update", "phone", "--enable"])))).toMatchObject({ enabled: true });
    await waitFor("the server to see the line enabled", 10_000, async () => (await serverLines()).find((l) => l.id === phone.id)?.enabled === true);
  });

  test("send --line sends through that line: the phone gets our id, history shows the line", async () => {
    const to = newPhone();
    const sent = JSON.parse(ok(await cli(["send", to, "-- from the CLI", "--line", "phone"]))) as { success: boolean; message_id: string; status: string };
    expect(sent).toMatchObject({ success: true, status: "sent" });
    expect(fake.message(sent.message_id)).toMatchObject({ text: "-- from the CLI", phoneNumbers: [to] });
    const [stored] = (await history(server, to)).messages as (MessageRecord & { line_id: string })[];
    expect(stored).toMatchObject({ id: sent.message_id, line_id: phone.id, status: "sent" });

    expectOneLine(await cli(["send", newPhone(), "hello", "--line", "nowhere"]), 1, "nowhere");
  });

  test("lines remove deletes a line that carried nothing (its webhooks removed), and refuses one with messages (exit 1)", async () => {
    const spare = JSON.parse(ok(await cli(["lines", "add", "spare", "android", ...androidArgs()]))) as LineRecord;
    expect(fake.webhooks).toHaveLength(8);
    expect(ok(await cli(["lines", "remove", "spare"])).trim()).toBe("deleted spare");
    expect(hooksOf(spare)).toEqual([]);
    expect(hooksOf(phone)).toHaveLength(4);
    expect(lines(ok(await cli(["lines", "list"]))).some((l) => l.includes("spare"))).toBe(false);

    expectOneLine(await cli(["lines", "remove", "phone"]), 1, "has messages");
    expectOneLine(await cli(["lines", "remove", "nosuch"]), 1, "nosuch");
  });

  test("bad input: a usage error exits 2 naming the flag; a refused value exits 1 naming the field", async () => {
    expectOneLine(await cli(["lines", "add", "x", "loopback", "--enable"]), 2, "--enable");
    expectOneLine(await cli(["lines", "list", "--address", "+14155550100"]), 2, "--address");
    expectOneLine(await cli(["lines", "add", "x", "loopback", "--bogus"]), 2, "--bogus");
    expectOneLine(await cli(["lines", "add", "x", "android", "--setting", "url"]), 2, "--setting");
    expectOneLine(await cli(["lines", "update", "phone"]), 2, "--name");
    expectOneLine(await cli(["lines", "update", "phone", "--enable", "--disable"]), 2, "--disable");
    expectOneLine(await cli(["lines", "add", "x"]), 2, "NETWORK");
    expectOneLine(await cli(["lines", "frob"]), 2, "frob");
    expectOneLine(await cli(["secrets", "rotate"], { SECRET_KEY: "" }), 2, "SECRET_KEY");
    expectOneLine(await cli(["lines", "add", "x", "android", "--setting", `url=${fake.url}`, "--credential", `password=${PASSWORD}`]), 1, "settings.username");
    expect(lines(ok(await cli(["lines", "list"]))).some((l) => /\sx\s/.test(l))).toBe(false);
  });
});

describe("textwire secrets rotate", () => {
  test("re-encrypts the line's credentials under the new SECRET_KEY: the line works with it, the old key no longer opens them", async () => {
    // Every process must share one key: the server stops before the rotation.
    server.kill();
    const out = ok(await cli(["secrets", "rotate"], { OLD_SECRET_KEY: KEY_A, SECRET_KEY: KEY_B }));
    expect(out).toMatch(/re-encrypted [1-9]\d* stored secret\(s\) under SECRET_KEY/);
    expect(JSON.parse(ok(await cli(["lines", "test", "phone"], { SECRET_KEY: KEY_B }))).ok).toBe(true);
    expectOneLine(await cli(["lines", "list"], { SECRET_KEY: KEY_A }), 1, "SECRET_KEY");
    const stored = await db.contents();
    expect(stored).not.toContain(PASSWORD);
    expect(stored).not.toContain(fake.signingKey);
  });
});
