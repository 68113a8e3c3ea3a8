// Lines through the API (docs/lines.md): the real server with NETWORK=twilio (the
// environment's line, `default`) against one fake Twilio account, and lines added through
// /api/lines against a second fake Twilio account and a fake BlueBubbles server:
// - create, list, get by id and by name; fields checked by name (400), names unique (409),
//   Twilio lines only with PUBLIC_URL (422);
// - credentials write-only: never in an answer, an event or a log line;
// - `test` against each network, ok or not with what failed;
// - update (settings replaced, credentials merged and still working), the default mark
//   moving, disable, delete, and the events each change writes, with the acting key;
// - the environment's line read-only but for taking the default mark back;
// - inbound per line at /webhooks/lines/:id with that line's own credentials, and
//   /webhooks/twilio still the environment's; `line=` on history and poll;
// - MCP: list_lines, and send_message with `line`, through the SDK's client.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { call, expectBadField, expectError, history, newPhone, poll, type MessageRecord } from "./api";
import { fileServers, waitFor, type Server } from "./harness";
import type { LineRecord } from "../../src/lines/schemas";
import { bbMessage, bbNotification, startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import {
  TEST_FROM,
  TEST_PUBLIC_URL,
  postTwilioWebhook,
  signTwilioRequest,
  startFakeTwilio,
  twilioInboundParams,
  twilioEnv,
  type FakeTwilio,
} from "../support/fake-twilio";

setDefaultTimeout(30_000);

/** The sales number: a second Twilio number, on an account of its own. */
const SALES_FROM = "+14155550177";
const BB_SECRET = randomBytes(24).toString("base64url");

type Record_ = MessageRecord & { line_id: string };
interface EventRecord {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

const servers = fileServers();
let envTwilio: FakeTwilio;
let salesTwilio: FakeTwilio;
let bb: FakeBlueBubbles;
/** NETWORK=twilio with PUBLIC_URL: the deployment under test. */
let server: Server;
/** Every credential this file gives Textwire: none may come back out. */
const secrets: string[] = [];

beforeAll(async () => {
  envTwilio = startFakeTwilio();
  salesTwilio = startFakeTwilio();
  bb = startFakeBlueBubbles({ privateApi: true });
  secrets.push(envTwilio.authToken, salesTwilio.authToken, bb.password, BB_SECRET);
  server = await servers.boot({ env: twilioEnv(envTwilio) });
}, 60_000);
afterAll(async () => {
  await Promise.all([envTwilio?.stop(), salesTwilio?.stop(), bb?.stop()]);
});

function salesBody(extra: Record<string, unknown> = {}) {
  return {
    name: "sales",
    network: "twilio",
    address: SALES_FROM,
    settings: { account_sid: salesTwilio.accountSid, api_url: salesTwilio.url },
    credentials: { auth_token: salesTwilio.authToken },
    ...extra,
  };
}

function bbBody(extra: Record<string, unknown> = {}) {
  return {
    name: "imessage",
    network: "bluebubbles",
    address: "support@icloud.example",
    settings: { url: bb.url },
    credentials: { password: bb.password, webhook_secret: BB_SECRET },
    ...extra,
  };
}

async function createLine(body: unknown, key?: string): Promise<LineRecord> {
  const res = await call<{ success: boolean; line: LineRecord }>(server, "POST", "/api/lines", { body, ...(key ? { key } : {}) });
  if (res.status !== 201) throw new Error(`create line: expected 201, got ${res.status}: ${res.text}`);
  expect(res.body.success).toBe(true);
  return res.body.line;
}

async function patchLine(ref: string, body: unknown): Promise<LineRecord> {
  const res = await call<{ line: LineRecord }>(server, "PATCH", `/api/lines/${ref}`, { body });
  if (res.status !== 200) throw new Error(`update line ${ref}: expected 200, got ${res.status}: ${res.text}`);
  return res.body.line;
}

async function listLines(target = server): Promise<LineRecord[]> {
  const res = await call<{ success: boolean; lines: LineRecord[] }>(target, "GET", "/api/lines");
  expect(res.status).toBe(200);
  return res.body.lines;
}

async function testLine(ref: string): Promise<{ ok: boolean; detail: string }> {
  const res = await call<{ success: boolean; ok: boolean; detail: string }>(server, "POST", `/api/lines/${ref}/test`);
  if (res.status !== 200) throw new Error(`test line ${ref}: expected 200, got ${res.status}: ${res.text}`);
  expect(res.body.success).toBe(true);
  return res.body;
}

async function sendOn(body: Record<string, unknown>) {
  return call<{ success: boolean; message_id: string }>(server, "POST", "/api/send", { body });
}

async function sent(body: Record<string, unknown>): Promise<string> {
  const res = await sendOn(body);
  if (res.status !== 200) throw new Error(`send: expected 200, got ${res.status}: ${res.text}`);
  return res.body.message_id;
}

async function recordOf(phone: string, id: string): Promise<Record_> {
  const found = (await history(server, phone)).messages.find((m) => m.id === id) as Record_ | undefined;
  if (!found) throw new Error(`no message ${id} in the history of ${phone}`);
  return found;
}

async function events(type: string): Promise<EventRecord[]> {
  const res = await call<{ events: EventRecord[] }>(server, "GET", `/api/events?${new URLSearchParams({ type, limit: "100" })}`);
  expect(res.status).toBe(200);
  return res.body.events;
}

function expectNoSecret(text: string, what: string): void {
  for (const s of secrets) if (text.includes(s)) throw new Error(`${what} holds a credential: …${text.slice(Math.max(0, text.indexOf(s) - 200), text.indexOf(s) + 50)}…`);
}

let sales: LineRecord;
let imessage: LineRecord;

describe("lines as a resource", () => {
  test("a Twilio line and a BlueBubbles line are created (201) with their settings, webhook URL and no credentials", async () => {
    sales = await createLine(salesBody());
    expect(sales).toMatchObject({
      name: "sales",
      network: "twilio",
      address: SALES_FROM,
      enabled: true,
      default: false,
      fallback: null,
      settings: { account_sid: salesTwilio.accountSid, api_url: salesTwilio.url },
      webhook_url: `${TEST_PUBLIC_URL}/webhooks/lines/${sales.id}`,
      managed: "api",
    });
    expect(sales.id).toMatch(/^ln_[A-Za-z0-9_-]+$/);
    expect(Object.keys(sales)).not.toContain("credentials");
    imessage = await createLine(bbBody({ fallback: "sales" }));
    expect(imessage).toMatchObject({ name: "imessage", network: "bluebubbles", settings: { url: bb.url }, fallback: sales.id, managed: "api", default: false });
    expect(imessage.webhook_url).toBe(`${TEST_PUBLIC_URL}/webhooks/lines/${imessage.id}`);
    expect(imessage.capabilities).toMatchObject({ reactions: true });
  });

  test("GET /api/lines lists the environment's line first (ln_default, managed env, default) and the new ones; a line is the same by id and by name", async () => {
    const all = await listLines();
    expect(all.map((l) => l.name)).toEqual(["default", "sales", "imessage"]);
    expect(all[0]).toMatchObject({ id: "ln_default", name: "default", network: "twilio", address: TEST_FROM, managed: "env", default: true, enabled: true });
    expect(all.filter((l) => l.default)).toHaveLength(1);
    for (const line of all) {
      const byId = await call<{ line: LineRecord }>(server, "GET", `/api/lines/${line.id}`);
      const byName = await call<{ line: LineRecord }>(server, "GET", `/api/lines/${line.name}`);
      expect(byId.status).toBe(200);
      expect(byName.body.line).toEqual(byId.body.line);
      expect(byId.body.line).toEqual(line);
    }
    expectError(await call(server, "GET", "/api/lines/nope"), 404, "NOT_FOUND");
  });

  test("bad input names the field: settings.account_sid, an unknown settings.bogus, credentials.auth_token; a taken name is 409", async () => {
    expectBadField(await call(server, "POST", "/api/lines", { body: salesBody({ name: "bad-sid", settings: { account_sid: "nope", api_url: salesTwilio.url } }) }), "settings.account_sid");
    expectBadField(await call(server, "POST", "/api/lines", { body: salesBody({ name: "bogus", settings: { account_sid: salesTwilio.accountSid, bogus: 1 } }) }), "settings.bogus");
    expectBadField(await call(server, "POST", "/api/lines", { body: salesBody({ name: "no-token", credentials: {} }) }), "credentials.auth_token");
    expectBadField(await call(server, "POST", "/api/lines", { body: salesBody({ name: "Not A Name" }) }), "name");
    expectBadField(await call(server, "POST", "/api/lines", { body: { ...salesBody({ name: "extra" }), colour: "red" } }), "colour");
    expectBadField(await call(server, "PATCH", `/api/lines/${sales.id}`, { body: { settings: { account_sid: salesTwilio.accountSid, bogus: true } } }), "settings.bogus");
    const taken = expectError(await call(server, "POST", "/api/lines", { body: salesBody() }), 409, "CONFLICT", secrets);
    expect(taken.error.message).toContain("name");
    // Nothing of these was stored.
    expect((await listLines()).map((l) => l.name)).toEqual(["default", "sales", "imessage"]);
  });

  test("a Twilio line without PUBLIC_URL is 422 saying so (Twilio could not post its webhooks)", async () => {
    const bare = await servers.boot();
    const refused = expectError(await call(bare, "POST", "/api/lines", { body: salesBody() }), 422, "UNPROCESSABLE_CONTENT", secrets);
    expect(refused.error.message).toContain("PUBLIC_URL");
    expect((await listLines(bare)).map((l) => l.name)).toEqual(["default"]);
    bare.kill();
  });

  test("test: the Twilio account fetch (ok; a wrong token or an unreachable API is ok false with what failed), BlueBubbles' server/info", async () => {
    const before = salesTwilio.requests.length;
    expect(await testLine("sales")).toMatchObject({ ok: true, detail: expect.stringContaining(salesTwilio.accountSid) });
    // Twilio's Account resource with the line's own credentials, and nothing sent.
    const asked = salesTwilio.requests.slice(before);
    expect(asked.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /2010-04-01/Accounts/${salesTwilio.accountSid}.json`]);
    expect(asked[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`${salesTwilio.accountSid}:${salesTwilio.authToken}`).toString("base64")}`);

    const wrong = await createLine(salesBody({ name: "wrong-token", credentials: { auth_token: "0123456789abcdef0123456789abcdef" } }));
    const refused = await testLine(wrong.id);
    expect(refused.ok).toBe(false);
    expect(refused.detail).toContain("401");
    // A closed port: nothing listens there once the server is stopped.
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const closedUrl = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    const unreachable = await createLine(salesBody({ name: "unreachable", settings: { account_sid: salesTwilio.accountSid, api_url: closedUrl } }));
    const down = await testLine(unreachable.name);
    expect(down.ok).toBe(false);
    expect(down.detail.length).toBeGreaterThan(10);
    expectNoSecret(JSON.stringify([refused, down]), "a test's answer");

    const bbBefore = bb.requests.length;
    const info = await testLine("imessage");
    expect(info).toMatchObject({ ok: true, detail: expect.stringContaining("Private API on") });
    expect(bb.requests.slice(bbBefore).map((r) => `${r.method} ${r.path}`)).toEqual(["GET /api/v1/server/info"]);

    // Lines that never carried a message are deleted; their names are free again.
    for (const l of [wrong, unreachable]) expect((await call(server, "DELETE", `/api/lines/${l.id}`)).status).toBe(200);
  });

  test("update: settings given replace the settings; credentials given merge with the stored ones, which still work", async () => {
    const phone = newPhone();
    // Settings replaced: send_timeout_ms added, and everything not given is gone.
    const updated = await patchLine("sales", { settings: { account_sid: salesTwilio.accountSid, api_url: salesTwilio.url, send_timeout_ms: 5000 } });
    expect(updated.settings).toEqual({ account_sid: salesTwilio.accountSid, api_url: salesTwilio.url, send_timeout_ms: 5000 });
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(sales.updated_at));
    // The token was not given: it is kept, and a send through the line still goes out with it.
    const before = salesTwilio.sends.length;
    const id = await sent({ phone, message: "after a settings change", line: "sales" });
    const req = salesTwilio.sends.slice(before);
    expect(req.map((r) => [r.body.To, r.body.From, r.headers.authorization])).toEqual([[phone, SALES_FROM, `Basic ${Buffer.from(`${salesTwilio.accountSid}:${salesTwilio.authToken}`).toString("base64")}`]]);
    expect((await recordOf(phone, id)).line_id).toBe(sales.id);

    // BlueBubbles: only the webhook secret given; the password is kept (a send goes through) and the new secret checks inbound.
    const newSecret = randomBytes(24).toString("base64url");
    secrets.push(newSecret);
    await patchLine("imessage", { credentials: { webhook_secret: newSecret } });
    const bbPhone = newPhone();
    // On iMessage (else the line's fallback would take it before sending).
    bb.imessage.add(bbPhone);
    const bbSends = bb.sends.length;
    const bbId = await sent({ phone: bbPhone, message: "password kept", line: "imessage" });
    expect(bb.sends.length).toBe(bbSends + 1);
    expect(bb.sent.at(-1)!.text).toBe("password kept");
    expect((await recordOf(bbPhone, bbId)).line_id).toBe(imessage.id);
    const post = (secret: string, text: string) =>
      fetch(`${server.url}/webhooks/lines/${imessage.id}?secret=${secret}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "new-message", data: bbNotification(bbMessage({ address: bbPhone, text })) }),
      });
    expect((await post(BB_SECRET, "with the old secret")).status).toBe(401);
    expect((await post(newSecret, "with the new secret")).status).toBe(200);
    const inbound = (await history(server, bbPhone)).messages.filter((m) => m.direction === "inbound") as Record_[];
    expect(inbound.map((m) => [m.message, m.line_id])).toEqual([["with the new secret", imessage.id]]);
  });

  test("the default mark moves: one default at a time, and a new phone's send takes it", async () => {
    const moved = await patchLine("sales", { default: true });
    expect(moved.default).toBe(true);
    const all = await listLines();
    expect(all.filter((l) => l.default).map((l) => l.name)).toEqual(["sales"]);
    // A new phone (not on iMessage: the BlueBubbles server says so) goes out on the default line.
    const phone = newPhone();
    const id = await sent({ phone, message: "on the default line" });
    expect((await recordOf(phone, id)).line_id).toBe(sales.id);
    expect(salesTwilio.sends.at(-1)!.body.To).toBe(phone);
    // The environment's line takes the mark back: the one change it takes through the API.
    expect((await patchLine("default", { default: true })).default).toBe(true);
    expect((await listLines()).filter((l) => l.default).map((l) => l.name)).toEqual(["default"]);
  });

  test("the environment's line is read-only through the API, but for taking the default mark", async () => {
    for (const body of [{ name: "renamed" }, { enabled: false }, { address: "+14155550111" }, { settings: {} }, { credentials: { auth_token: "x" } }, { fallback: "sales" }]) {
      expectError(await call(server, "PATCH", "/api/lines/ln_default", { body }), 409, "CONFLICT", secrets);
    }
    expectError(await call(server, "DELETE", "/api/lines/default"), 409, "CONFLICT");
    expect((await listLines())[0]).toMatchObject({ id: "ln_default", name: "default", enabled: true, address: TEST_FROM, managed: "env" });
  });

  test("a disabled line: an explicit `line` is 409, an unknown one 400; enabled again it sends", async () => {
    expect((await patchLine("sales", { enabled: false })).enabled).toBe(false);
    const phone = newPhone();
    expectError(await sendOn({ phone, message: "refused", line: "sales" }), 409, "CONFLICT");
    expectBadField(await sendOn({ phone, message: "refused", line: "no-such-line" }), "line");
    // Nothing was stored or sent for those.
    expect((await history(server, phone)).total).toBe(0);
    expect((await patchLine(sales.id, { enabled: true })).enabled).toBe(true);
    const id = await sent({ phone, message: "enabled again", line: sales.id });
    expect((await recordOf(phone, id)).line_id).toBe(sales.id);
  });

  test("delete: a line with messages is 409 (disable it), one without goes, with line.deleted", async () => {
    const blocked = expectError(await call(server, "DELETE", "/api/lines/sales"), 409, "CONFLICT");
    expect(blocked.error.message).toContain("disable");
    const spare = await createLine(salesBody({ name: "spare" }));
    const gone = await call<{ success: boolean; line: LineRecord }>(server, "DELETE", `/api/lines/spare`);
    expect(gone.status).toBe(200);
    expect(gone.body.line).toMatchObject({ id: spare.id, name: "spare" });
    expectError(await call(server, "GET", `/api/lines/${spare.id}`), 404, "NOT_FOUND");
    expect((await events("line.deleted")).map((e) => e.data.id)).toContain(spare.id);
  });

  test("each change is an event with the line record and the acting key; a key limited to lines:manage is named by its id", async () => {
    const created = await events("line.created");
    const updated = await events("line.updated");
    expect(created.find((e) => e.data.id === sales.id)!.data).toMatchObject({ name: "sales", network: "twilio", settings: { account_sid: salesTwilio.accountSid }, actor_key_id: "env:0" });
    expect(updated.filter((e) => e.data.id === sales.id).map((e) => [e.data.enabled, e.data.default])).toEqual([
      [true, false],
      [true, true],
      [false, false],
      [true, false],
    ]);
    // The environment's line taking the mark back is an update too.
    expect(updated.some((e) => e.data.id === "ln_default" && e.data.default === true)).toBe(true);

    const minted = await call<{ key: string; api_key: { id: string } }>(server, "POST", "/api/keys", { body: { name: "line-admin", scopes: ["lines:manage"] } });
    expect(minted.status).toBe(201);
    const byAdmin = await createLine(salesBody({ name: "by-admin" }), minted.body.key);
    expect((await events("line.created")).find((e) => e.data.id === byAdmin.id)!.data.actor_key_id).toBe(minted.body.api_key.id);
    // A key without lines:manage may not change lines.
    const reader = await call<{ key: string }>(server, "POST", "/api/keys", { body: { name: "reader", scopes: ["messages:read"] } });
    expectError(await call(server, "POST", "/api/lines", { body: salesBody({ name: "by-reader" }), key: reader.body.key }), 403, "FORBIDDEN");
    expect((await call(server, "DELETE", `/api/lines/${byAdmin.id}`, { key: minted.body.key })).status).toBe(200);
    expect((await events("line.deleted")).find((e) => e.data.id === byAdmin.id)!.data.actor_key_id).toBe(minted.body.api_key.id);
  });
});

describe("inbound per line", () => {
  const signedPost = (path: string, params: Record<string, string>, token: string) =>
    postTwilioWebhook(server.url, path, params, signTwilioRequest(token, TEST_PUBLIC_URL + path, params));

  test("/webhooks/lines/:id is checked with that line's own token and stores on that line; another line's token is 401", async () => {
    const phone = newPhone();
    const path = `/webhooks/lines/${sales.id}`;
    const params = twilioInboundParams({ accountSid: salesTwilio.accountSid, from: phone, to: SALES_FROM, body: "to the sales number" });
    const forged = await signedPost(path, params, envTwilio.authToken);
    expect(forged.status).toBe(401);
    expect((await history(server, phone)).total).toBe(0);
    const ok = await signedPost(path, params, salesTwilio.authToken);
    expect(ok.status).toBe(200);
    const [stored] = (await history(server, phone)).messages as Record_[];
    expect(stored).toMatchObject({ direction: "inbound", message: "to the sales number", status: "received", line_id: sales.id });
    // A reply with no line named goes out on the line it came in on (sticky).
    const before = salesTwilio.sends.length;
    const id = await sent({ phone, message: "answered on sales" });
    expect(salesTwilio.sends.slice(before).map((r) => r.body.To)).toEqual([phone]);
    expect((await recordOf(phone, id)).line_id).toBe(sales.id);
  });

  test("/webhooks/twilio still serves the environment's line, with its token", async () => {
    const phone = newPhone();
    const params = twilioInboundParams({ accountSid: envTwilio.accountSid, from: phone, to: TEST_FROM, body: "to the old number" });
    expect((await signedPost("/webhooks/twilio", params, salesTwilio.authToken)).status).toBe(401);
    expect((await signedPost("/webhooks/twilio", params, envTwilio.authToken)).status).toBe(200);
    const [stored] = (await history(server, phone)).messages as Record_[];
    expect(stored).toMatchObject({ direction: "inbound", message: "to the old number", line_id: "ln_default" });
    const before = envTwilio.sends.length;
    await sent({ phone, message: "answered on the old number" });
    expect(envTwilio.sends.slice(before).map((r) => [r.body.To, r.body.From])).toEqual([[phone, TEST_FROM]]);
  });

  test("a BlueBubbles line's webhook takes its own secret only; an unknown line's webhook is 404", async () => {
    const url = `${server.url}/webhooks/lines/${imessage.id}?secret=`;
    const phone = newPhone();
    const post = (path: string) =>
      fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "new-message", data: bbNotification(bbMessage({ address: phone, text: "hi over iMessage" })) }) });
    expect((await post(url + "wrong-secret-wrong-secret-123")).status).toBe(401);
    expect((await post(`${server.url}/webhooks/lines/ln_nope?secret=${BB_SECRET}`)).status).toBe(404);
    expect((await history(server, phone)).total).toBe(0);
  });

  test("line= narrows history and poll (by id or name); an unknown line is 400 naming it", async () => {
    const phone = newPhone();
    // One contact on two lines: an inbound on sales, another on the environment's line.
    await signedPost(`/webhooks/lines/${sales.id}`, twilioInboundParams({ accountSid: salesTwilio.accountSid, from: phone, to: SALES_FROM, body: "on sales" }), salesTwilio.authToken);
    await signedPost("/webhooks/twilio", twilioInboundParams({ accountSid: envTwilio.accountSid, from: phone, to: TEST_FROM, body: "on default" }), envTwilio.authToken);
    const all = await history(server, phone);
    expect(all.messages.map((m) => m.message)).toEqual(["on default", "on sales"]);
    expect((await history(server, phone, "line=sales")).messages.map((m) => m.message)).toEqual(["on sales"]);
    expect((await history(server, phone, `line=${sales.id}`)).total).toBe(1);
    expect((await history(server, phone, "line=default")).messages.map((m) => m.message)).toEqual(["on default"]);
    expect((await poll(server, { phone, line: "sales" })).messages.map((m) => m.message)).toEqual(["on sales"]);
    expect((await poll(server, { phone, line: "ln_default" })).messages.map((m) => m.message)).toEqual(["on default"]);
    expect((await poll(server, { phone })).messages.map((m) => m.message)).toEqual(["on sales", "on default"]);
    expectBadField(await call(server, "GET", `/api/messages/${encodeURIComponent(phone)}?line=nope`), "line");
    expectBadField(await call(server, "GET", "/api/messages/poll?line=nope"), "line");
  });
});

describe("MCP", () => {
  let client: Client | undefined;
  afterAll(async () => {
    await client?.close().catch(() => undefined);
  });

  test("list_lines answers the lines without settings; send_message takes `line`", async () => {
    client = new Client({ name: "textwire-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${server.apiKey}` } } }));
    await client.listTools();
    const listed = (await client.callTool({ name: "list_lines", arguments: {} })) as CallToolResult;
    expect(listed.isError).toBeFalsy();
    const { lines } = listed.structuredContent as { lines: Record<string, unknown>[] };
    expect(lines.map((l) => [l.id, l.name, l.network, l.default])).toEqual([
      ["ln_default", "default", "twilio", true],
      [sales.id, "sales", "twilio", false],
      [imessage.id, "imessage", "bluebubbles", false],
    ]);
    for (const l of lines) {
      expect(Object.keys(l)).not.toContain("settings");
      expect(Object.keys(l)).not.toContain("webhook_url");
    }
    expectNoSecret(JSON.stringify(listed), "list_lines");

    const phone = newPhone();
    const before = salesTwilio.sends.length;
    const result = (await client.callTool({ name: "send_message", arguments: { phone, message: "from an agent, on sales", line: "sales" } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ phone, message: "from an agent, on sales", direction: "outbound", line_id: sales.id });
    expect(salesTwilio.sends.slice(before).map((r) => [r.body.To, r.body.From])).toEqual([[phone, SALES_FROM]]);
    const refused = (await client.callTool({ name: "send_message", arguments: { phone, message: "nowhere", line: "no-such-line" } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect((refused.content[0] as { text: string }).text).toContain("line");
  });
});

describe("credentials are write-only", () => {
  test("no answer, event or log line ever held a credential", async () => {
    expectNoSecret(JSON.stringify(await listLines()), "GET /api/lines");
    for (const ref of ["default", "sales", "imessage"]) expectNoSecret((await call(server, "GET", `/api/lines/${ref}`)).text, `GET /api/lines/${ref}`);
    const all = await call(server, "GET", "/api/events?limit=100");
    expect(all.status).toBe(200);
    expectNoSecret(all.text, "GET /api/events");
    for (const type of ["line.created", "line.updated", "line.deleted"]) {
      const list = await events(type);
      expect(list.length).toBeGreaterThan(0);
      expectNoSecret(JSON.stringify(list), type);
      for (const e of list) expect(Object.keys(e.data)).not.toContain("credentials");
    }
    // The logs of the whole file, given every credential above, and a tRPC read.
    const trpc = await call(server, "GET", `/trpc/lines.list`);
    expect(trpc.status).toBe(200);
    expectNoSecret(trpc.text, "tRPC lines.list");
    expectNoSecret(server.stdout + server.stderr, "the server's log");
  });

  test("with nothing changed, the lines are not read again: no rebuild is logged over two refreshes", async () => {
    const rebuilds = () => server.stdout.split("lines changed; drivers rebuilt").length;
    // Let the refresh after the last change pass (every 2 s), then watch two more.
    await Bun.sleep(2_500);
    const before = rebuilds();
    await Bun.sleep(4_500);
    expect(rebuilds()).toBe(before);
  });
});
