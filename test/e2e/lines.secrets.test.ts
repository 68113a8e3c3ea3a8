// Secrets at rest (docs/lines.md "Secrets"): line credentials and webhook endpoints' signing
// secrets are stored sealed (AES-256-GCM, `tw1:`) under SECRET_KEY, looked at directly in
// the database:
// - SQLite: the first start without SECRET_KEY generates `secret.key` beside the database
//   (mode 0600) and seals at once;
// - PostgreSQL: without SECRET_KEY each start warns once naming it and stores secrets as they
//   are; the first start with it seals them;
// - a wrong SECRET_KEY stops the start with one line naming SECRET_KEY, no stack trace;
// - `textwire secrets rotate` (OLD_SECRET_KEY → SECRET_KEY) re-seals everything, and the
//   server started with the new key sends through its lines and signs deliveries that verify.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { call, newPhone } from "./api";
import { fileServers, lines, onPostgres, runCli, spawnServer, testDatabase, waitFor, type Server, type TestDatabase } from "./harness";
import { startFakeTwilio, TEST_PUBLIC_URL, type FakeTwilio } from "../support/fake-twilio";
import { startReceiver, verifies, type Receiver } from "../support/webhook-receiver";

setDefaultTimeout(60_000);

const SMS_FROM = "+14155550133";
const BASE_ENV = { PUBLIC_URL: TEST_PUBLIC_URL, ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE: "0.3,0.3", NETWORK: undefined };
const newKey = () => randomBytes(32).toString("base64");

const servers = fileServers();
let fake: FakeTwilio;
let receiver: Receiver;
let db: TestDatabase;
let lineId: string;
let endpointId: string;
/** The key secrets are sealed with after the first starts (SQLite: secret.key's; PostgreSQL: the one set). */
let firstKey: string;

beforeAll(async () => {
  fake = startFakeTwilio();
  receiver = startReceiver();
  db = servers.track(await testDatabase());
});
afterAll(async () => {
  receiver?.stop();
  await fake?.stop();
});

async function boot(env: Record<string, string | undefined> = {}): Promise<Server> {
  return servers.boot({ db, env: { ...BASE_ENV, ...env } });
}

async function stored(): Promise<{ credentials: string; secret: string }> {
  const [line] = await db.query<{ credentials: string }>("SELECT credentials FROM lines WHERE id = ?", lineId);
  const [endpoint] = await db.query<{ secret: string }>("SELECT secret FROM webhook_endpoints WHERE id = ?", endpointId);
  return { credentials: line!.credentials, secret: endpoint!.secret };
}

async function expectSealed(): Promise<{ credentials: string; secret: string }> {
  const now = await stored();
  for (const value of [now.credentials, now.secret]) expect(value).toStartWith("tw1:");
  const everything = await db.contents();
  expect(everything).not.toContain(fake.authToken);
  expect(everything).not.toContain(receiver.secret!);
  return now;
}

/** A send through the line goes out with its token, and the event it makes reaches the receiver signed with the endpoint's secret. */
async function expectLineAndDeliveryWork(server: Server): Promise<void> {
  const phone = newPhone();
  const before = fake.sends.length;
  const received = receiver.received.length;
  const res = await call<{ message_id: string }>(server, "POST", "/api/send", { body: { phone, message: "sealed, still working", line: "sms" } });
  if (res.status !== 200) throw new Error(`send: ${res.status} ${res.text}\n${server.stdout.slice(-3000)}`);
  expect(fake.sends.slice(before).map((r) => [r.body.To, r.headers.authorization])).toEqual([[phone, `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString("base64")}`]]);
  const test = await call<{ ok: boolean }>(server, "POST", "/api/lines/sms/test");
  expect(test.body.ok).toBe(true);
  const mine = await waitFor("a delivery about the send", 10_000, () => receiver.received.slice(received).find((r) => r.body.includes(res.body.message_id)), () => server.stdout);
  expect(mine.verified).toBe(true);
  expect(verifies(receiver.secret!, mine)).toBe(true);
}

async function stop(server: Server): Promise<void> {
  expect(await server.stop()).toBe(0);
}

describe(`secrets at rest on ${onPostgres ? "PostgreSQL" : "SQLite"}`, () => {
  test(onPostgres ? "without SECRET_KEY: one warning naming it, and secrets stored as given" : "the first start generates secret.key (0600) beside the database and stores secrets sealed", async () => {
    const server = await boot({ SECRET_KEY: undefined });
    const line = await call<{ line: { id: string } }>(server, "POST", "/api/lines", {
      body: { name: "sms", network: "twilio", address: SMS_FROM, settings: { account_sid: fake.accountSid, api_url: fake.url }, credentials: { auth_token: fake.authToken } },
    });
    expect(line.status).toBe(201);
    lineId = line.body.line.id;
    const endpoint = await call<{ endpoint: { id: string; secret: string } }>(server, "POST", "/api/webhook-endpoints", { body: { url: receiver.url } });
    expect(endpoint.status).toBe(201);
    endpointId = endpoint.body.endpoint.id;
    receiver.secret = endpoint.body.endpoint.secret;

    if (onPostgres) {
      expect(lines(server.stdout).filter((l) => l.includes("SECRET_KEY"))).toHaveLength(1);
      expect(lines(server.stdout).find((l) => l.includes("SECRET_KEY"))).toContain('"level":"warn"');
      const plain = await stored();
      expect(JSON.parse(plain.credentials)).toEqual({ auth_token: fake.authToken });
      expect(plain.secret).toBe(receiver.secret);
    } else {
      const file = join(dirname(db.url), "secret.key");
      expect(existsSync(file)).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(server.stdout).toContain("generated a secret key");
      firstKey = readFileSync(file, "utf8").trim();
      expect(Buffer.from(firstKey, "base64")).toHaveLength(32);
      await expectSealed();
    }
    await expectLineAndDeliveryWork(server);
    await stop(server);
  });

  test(onPostgres ? "the first start with SECRET_KEY seals what is stored, and everything still works" : "a start with the same secret.key opens what is stored", async () => {
    if (onPostgres) firstKey = newKey();
    const before = await stored();
    const server = await boot(onPostgres ? { SECRET_KEY: firstKey } : { SECRET_KEY: undefined });
    expect(server.stdout).not.toContain("SECRET_KEY is not set");
    const after = await expectSealed();
    if (!onPostgres) expect(after).toEqual(before);
    await expectLineAndDeliveryWork(server);
    await stop(server);
  });

  test("a wrong SECRET_KEY stops the start with one line naming SECRET_KEY, no stack trace, and changes nothing", async () => {
    const before = await stored();
    const child = await spawnServer({ db, env: { ...BASE_ENV, SECRET_KEY: newKey() } });
    const code = await child.exited(20_000);
    expect(code).not.toBe(0);
    const output = lines(child.stdout + child.stderr);
    expect(output.filter((l) => l.includes("SECRET_KEY"))).toHaveLength(1);
    expect(output.join("\n")).not.toMatch(/^\s+at\s/m);
    expect(output.join("\n")).not.toContain("listening on");
    expect(await stored()).toEqual(before);
  });

  test("textwire secrets rotate re-seals everything under the new key; the server starts with it and its lines and deliveries work", async () => {
    const secondKey = newKey();
    const before = await stored();
    const rotated = await runCli(["secrets", "rotate"], { DATABASE_URL: db.url, OLD_SECRET_KEY: firstKey, SECRET_KEY: secondKey });
    expect({ code: rotated.code, stderr: rotated.stderr }).toEqual({ code: 0, stderr: "" });
    expect(rotated.stdout).toContain("re-encrypted 2 stored secret(s)");
    const after = await expectSealed();
    expect(after.credentials).not.toBe(before.credentials);
    expect(after.secret).not.toBe(before.secret);

    // The old key no longer opens them.
    const old = await spawnServer({ db, env: { ...BASE_ENV, SECRET_KEY: firstKey } });
    expect(await old.exited(20_000)).not.toBe(0);
    expect(old.stdout + old.stderr).toContain("SECRET_KEY");

    const server = await boot({ SECRET_KEY: secondKey });
    await expectLineAndDeliveryWork(server);
    expect(server.stdout).not.toContain('"level":"error"');
    await stop(server);
  });
});
