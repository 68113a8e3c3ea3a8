// Upgrading to lines changes nothing for a deployment that changes nothing (docs/lines.md
// "Upgrading"): a database made by the code before lines (commit e811421, the main branch
// when lines began), with NETWORK=twilio, sent and received on; then today's server on the
// same database with the same environment. It migrates and answers as before: the same
// records (each on the `default` line, ln_default), the same webhook URLs, the same number,
// the same Idempotency-Key answers. On SQLite and on PostgreSQL.
//
// The old code runs as itself: its tree from git (git archive, so CI needs the history,
// which a clean clone has) and its own `bun install --frozen-lockfile`, in a folder of this
// run's, removed afterwards.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, history, newPhone, poll, type MessageRecord } from "./api";
import { newApiKey, ROOT, startServer, testDatabase, waitFor, type Server, type TestDatabase } from "./harness";
import { startReceiver, type Receiver } from "../support/webhook-receiver";
import {
  TEST_FROM,
  TEST_PUBLIC_URL,
  postTwilioWebhook,
  signTwilioRequest,
  startFakeTwilio,
  twilioEnv,
  twilioInboundParams,
  twilioStatusParams,
  type FakeTwilio,
} from "../support/fake-twilio";

setDefaultTimeout(60_000);

/** The main branch before lines. */
const BEFORE_LINES = "e811421";
const INSTALL_MS = 180_000;

let oldDir: string;
let fake: FakeTwilio;
let receiver: Receiver;
let db: TestDatabase;
const apiKey = newApiKey();
const running: Server[] = [];

function run(cmd: string[], cwd: string, what: string): void {
  const started = performance.now();
  const result = Bun.spawnSync(cmd, { cwd, stdout: "pipe", stderr: "pipe", timeout: INSTALL_MS });
  if (result.exitCode !== 0) {
    throw new Error(`${what} failed (exit ${result.exitCode}${result.signalCode ? `, ${result.signalCode}` : ""}): ${result.stderr.toString().slice(-2000)}`);
  }
  console.log(`${what}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

beforeAll(async () => {
  oldDir = mkdtempSync(join(tmpdir(), `textwire-${BEFORE_LINES}-`));
  // A shallow clone lacks the commit: say how to get it rather than fail obscurely.
  const has = Bun.spawnSync(["git", "cat-file", "-e", `${BEFORE_LINES}^{commit}`], { cwd: ROOT });
  if (has.exitCode !== 0) throw new Error(`commit ${BEFORE_LINES} is not in this clone's history (git fetch --unshallow)`);
  run(["sh", "-c", `git -C "$1" archive ${BEFORE_LINES} | tar -x -C "$2"`, "archive", ROOT, oldDir], ROOT, `the tree of ${BEFORE_LINES}`);
  run(["bun", "install", "--frozen-lockfile"], oldDir, `bun install in ${BEFORE_LINES}`);
  fake = startFakeTwilio();
  receiver = startReceiver();
  db = await testDatabase();
}, INSTALL_MS + 30_000);

afterAll(async () => {
  for (const s of running) s.kill();
  await fake?.stop();
  receiver?.stop();
  await db?.cleanup();
  if (oldDir) rmSync(oldDir, { recursive: true, force: true });
}, 60_000);

async function boot(cwd?: string): Promise<Server> {
  const server = await startServer({ db, apiKey, env: twilioEnv(fake, { ALLOW_PRIVATE_URLS: "true" }), ...(cwd ? { cwd } : {}) });
  running.push(server);
  return server;
}

/** Posts to a Twilio webhook of `server` as Twilio does, signed for the PUBLIC_URL it was given. */
async function twilioPost(server: Server, pathAndQuery: string, params: Record<string, string>): Promise<number> {
  const reply = await postTwilioWebhook(server.url, pathAndQuery, params, signTwilioRequest(fake.authToken, TEST_PUBLIC_URL + pathAndQuery, params));
  return reply.status;
}

const inbound = (server: Server, from: string, body: string) => twilioPost(server, "/webhooks/twilio", twilioInboundParams({ accountSid: fake.accountSid, from, to: TEST_FROM, body }));

/** The StatusCallback Textwire gave Twilio for its last send, as a path and query. */
function lastCallback(): string {
  const url = new URL(fake.sends.at(-1)!.body.StatusCallback!);
  expect(url.origin).toBe(new URL(TEST_PUBLIC_URL).origin);
  return url.pathname + url.search;
}

const status = (server: Server, callback: string, sid: string, to: string, value: string) =>
  twilioPost(server, callback, twilioStatusParams({ accountSid: fake.accountSid, messageSid: sid, status: value, from: TEST_FROM, to }));

async function sendWithKey(server: Server, phone: string, message: string, key: string) {
  return call<{ success: boolean; message_id: string; timestamp: string }>(server, "POST", "/api/send", { body: { phone, message }, headers: { "Idempotency-Key": key } });
}

describe(`a NETWORK=twilio deployment upgraded from ${BEFORE_LINES} with nothing changed`, () => {
  const texter = newPhone();
  const quiet = newPhone();
  const idemKey = `before-upgrade-${crypto.randomUUID()}`;
  let before: { texter: MessageRecord[]; quiet: MessageRecord[]; poll: MessageRecord[]; network: unknown; replay: unknown };
  let firstId: string;
  let firstSid: string;
  let secondCallback: string;
  let secondSid: string;
  /** What the old server answered Twilio's webhooks (the same after the upgrade). */
  let statusAnswer: number;
  let inboundAnswer: number;

  test("the old server: sends through the Twilio number, takes signed inbound and status reports", async () => {
    const old = await boot(oldDir);
    // The code before lines: it has no /api/lines.
    expect((await call(old, "GET", "/api/lines")).status).toBe(404);
    // A webhook endpoint, its signing secret stored as that code stored it.
    const endpoint = await call<{ endpoint: { secret: string } }>(old, "POST", "/api/webhook-endpoints", { body: { url: receiver.url, events: ["message.received"] } });
    expect(endpoint.status).toBe(201);
    receiver.secret = endpoint.body.endpoint.secret;
    expect(await db.query("SELECT secret FROM webhook_endpoints")).toEqual([{ secret: receiver.secret }]);
    const first = await sendWithKey(old, texter, "hello before the upgrade", idemKey);
    expect(first.status).toBe(200);
    firstId = first.body.message_id;
    firstSid = fake.sids.at(-1)!;
    statusAnswer = await status(old, lastCallback(), firstSid, texter, "delivered");
    inboundAnswer = await inbound(old, texter, "a reply before the upgrade");
    expect([statusAnswer, inboundAnswer]).toEqual([204, 200]);
    expect(await inbound(old, quiet, "only inbound")).toBe(200);
    const second = await call<{ message_id: string }>(old, "POST", "/api/send", { body: { phone: texter, message: "still sent, not yet delivered" } });
    expect(second.status).toBe(200);
    secondCallback = lastCallback();
    secondSid = fake.sids.at(-1)!;
    expect(fake.sends.map((r) => [r.body.To, r.body.From])).toEqual([
      [texter, TEST_FROM],
      [texter, TEST_FROM],
    ]);

    before = {
      texter: (await history(old, texter)).messages,
      quiet: (await history(old, quiet)).messages,
      poll: (await poll(old)).messages,
      network: (await call(old, "GET", "/api/network")).body,
      replay: (await sendWithKey(old, texter, "hello before the upgrade", idemKey)).body,
    };
    expect(before.texter.map((m) => [m.direction, m.status])).toEqual([
      ["outbound", "sent"],
      ["inbound", "received"],
      ["outbound", "delivered"],
    ]);
    expect(await old.stop()).toBe(0);
  });

  test("today's server on the same database and environment migrates and answers the same records, each on the default line", async () => {
    const now = await boot();
    const onDefault = (records: MessageRecord[]) => records.map((m) => ({ ...m, line_id: "ln_default" }));
    expect((await history(now, texter)).messages).toEqual(onDefault(before.texter));
    expect((await history(now, quiet)).messages).toEqual(onDefault(before.quiet));
    expect((await poll(now)).messages).toEqual(onDefault(before.poll));
    expect((await history(now, texter, "line=default")).total).toBe(3);
    // The same answers: the network, and a retry of a send made before the upgrade (nothing sent again).
    expect((await call(now, "GET", "/api/network")).body).toEqual(before.network);
    const replay = await sendWithKey(now, texter, "hello before the upgrade", idemKey);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(before.replay as typeof replay.body);
    expect(replay.body.message_id).toBe(firstId);
    expect(fake.sends).toHaveLength(2);
  });

  test("the same webhook URLs: a status report for a message sent before, signed inbound at /webhooks/twilio", async () => {
    const now = running.at(-1)!;
    expect(await status(now, secondCallback, secondSid, texter, "delivered")).toBe(statusAnswer);
    const [latest] = (await history(now, texter)).messages;
    expect(latest).toMatchObject({ message: "still sent, not yet delivered", status: "delivered", line_id: "ln_default" });
    expect(await inbound(now, texter, "a reply after the upgrade")).toBe(inboundAnswer);
    expect((await history(now, texter)).messages[0]).toMatchObject({ direction: "inbound", message: "a reply after the upgrade", line_id: "ln_default" });
    // A forged one is still refused.
    const forged = await postTwilioWebhook(now.url, "/webhooks/twilio", twilioInboundParams({ accountSid: fake.accountSid, from: texter, to: TEST_FROM, body: "forged" }), signTwilioRequest("not-the-token", TEST_PUBLIC_URL + "/webhooks/twilio", {}));
    expect(forged.status).toBe(401);
    expect(firstSid).toMatch(/^SM/);
  });

  test("a send goes out through the same Twilio number with the same callback URL; GET /api/lines shows the default line, managed env", async () => {
    const now = running.at(-1)!;
    const sent = await call<{ message_id: string }>(now, "POST", "/api/send", { body: { phone: texter, message: "after the upgrade" } });
    expect(sent.status).toBe(200);
    // The endpoint made before still gets its events, signed with the secret it was given then
    // (sealed under the generated key on SQLite, as stored on PostgreSQL without SECRET_KEY).
    const delivered = await waitFor("the delivery of an inbound message received after the upgrade", 10_000, () => receiver.received.find((r) => r.body.includes("a reply after the upgrade")), () => now.stdout);
    expect(delivered.verified).toBe(true);
    const [row] = await db.query<{ secret: string }>("SELECT secret FROM webhook_endpoints");
    if (db.dialect === "sqlite") expect(row!.secret).toStartWith("tw1:");
    else expect(row!.secret).toBe(receiver.secret!);
    expect(fake.sends).toHaveLength(3);
    expect(fake.sends.at(-1)!.body).toEqual({ To: texter, Body: "after the upgrade", From: TEST_FROM, StatusCallback: `${TEST_PUBLIC_URL}/webhooks/twilio/status?id=${sent.body.message_id}` });
    expect((await history(now, texter)).messages[0]).toMatchObject({ id: sent.body.message_id, line_id: "ln_default", status: "sent" });
    const lines = await call<{ lines: Record<string, unknown>[] }>(now, "GET", "/api/lines");
    expect(lines.body.lines).toHaveLength(1);
    expect(lines.body.lines[0]).toMatchObject({
      id: "ln_default",
      name: "default",
      network: "twilio",
      address: TEST_FROM,
      enabled: true,
      default: true,
      managed: "env",
      settings: { account_sid: fake.accountSid },
      webhook_url: `${TEST_PUBLIC_URL}/webhooks/twilio`,
    });
    // Nothing went wrong on the way.
    expect(now.stdout).not.toContain('"level":"error"');
  });
});
